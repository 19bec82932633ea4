package admission

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The StorageObjectInUseProtection plugin, as Kubernetes': new claims and
// volumes carry a finalizer that the volume-protection controller
// (controllers/volumeprotection) removes only once no pod uses the claim, or
// the volume is no longer bound — so deleting a claim a pod still mounts, or
// a bound volume, waits instead of pulling storage from under a container.

var volumesResource = schema.GroupResource{Resource: "persistentvolumes"}

// Finalizer names, as Kubernetes'.
const (
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	PVProtectionFinalizer  = "kubernetes.io/pv-protection"
)

// storageObjects runs the mutating plugins of claims and volumes.
func (c *Chain) storageObjects(ctx context.Context, a *Attributes) error {
	switch o := a.Object.(type) {
	case *corev1.PersistentVolumeClaim:
		o.Finalizers = withFinalizer(o.Finalizers, PVCProtectionFinalizer)
		return c.defaultStorageClass(ctx, a)
	case *corev1.PersistentVolume:
		o.Finalizers = withFinalizer(o.Finalizers, PVProtectionFinalizer)
	}
	return nil
}

func withFinalizer(list []string, f string) []string {
	for _, x := range list {
		if x == f {
			return list
		}
	}
	return append(list, f)
}
