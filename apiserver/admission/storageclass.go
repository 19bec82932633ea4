package admission

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The DefaultStorageClass plugin, as Kubernetes': a new claim that names
// no class (storageClassName absent, not "") gets the default class, the
// one annotated storageclass.kubernetes.io/is-default-class: "true". With
// several defaults the newest wins (ties by name), as since Kubernetes 1.26;
// with none the claim is left as it is.

var claimsResource = schema.GroupResource{Resource: "persistentvolumeclaims"}

// storageClassPrefix is where StorageClasses are stored.
const storageClassPrefix = "/registry/storage.k8s.io/storageclasses/"

const (
	isDefaultClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	betaIsDefaultClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

func (c *Chain) defaultStorageClass(ctx context.Context, a *Attributes) error {
	pvc, ok := a.Object.(*corev1.PersistentVolumeClaim)
	if !ok || pvc.Spec.StorageClassName != nil {
		return nil
	}
	if _, ok := pvc.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		return nil
	}
	classes, _, err := listInto[storagev1.StorageClass](ctx, c.store, storageClassPrefix, false)
	if err != nil {
		return err
	}
	pick := newestDefault(classes, func(sc *storagev1.StorageClass) bool {
		return sc.Annotations[isDefaultClassAnnotation] == "true" || sc.Annotations[betaIsDefaultClassAnnotation] == "true"
	})
	if pick != nil {
		name := pick.Name
		pvc.Spec.StorageClassName = &name
	}
	return nil
}

// newestDefault is the newest of the classes isDefault marks (ties by
// name), nil when it marks none: how Kubernetes' DefaultStorageClass and
// DefaultIngressClass plugins choose among several defaults.
func newestDefault[T metav1.Object](classes []T, isDefault func(T) bool) T {
	var pick T
	found := false
	for _, c := range classes {
		if !isDefault(c) {
			continue
		}
		if !found {
			pick, found = c, true
			continue
		}
		ct, pt := c.GetCreationTimestamp(), pick.GetCreationTimestamp()
		if ct.After(pt.Time) || ct.Equal(&pt) && c.GetName() < pick.GetName() {
			pick = c
		}
	}
	return pick
}
