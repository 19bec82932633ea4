package admission

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	volumehelpers "k8s.io/component-helpers/storage/volume"
)

// The PersistentVolumeClaimResize plugin, as Kubernetes': a claim's storage
// request may grow only once it is bound, and only when its StorageClass
// (unchanged by the update) sets allowVolumeExpansion: true. skiff's
// local-path class does not, so its claims cannot grow; a shrink is
// validation's business, not this plugin's.
func (c *Chain) claimResize(ctx context.Context, a *Attributes, old runtime.Object) error {
	if a.Resource != claimsResource || a.Subresource != "" {
		return nil
	}
	pvc, ok := a.Object.(*corev1.PersistentVolumeClaim)
	oldPVC, ok2 := old.(*corev1.PersistentVolumeClaim)
	if !ok || !ok2 {
		return nil
	}
	newSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	oldSize := oldPVC.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) <= 0 {
		return nil
	}
	if oldPVC.Status.Phase != corev1.ClaimBound {
		return forbidden(a, "Only bound persistent volume claims can be expanded")
	}
	allowed, err := c.allowResize(ctx, pvc, oldPVC)
	if err != nil {
		return err
	}
	if !allowed {
		return forbidden(a, "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize")
	}
	return nil
}

// allowResize: the claim keeps a named class whose allowVolumeExpansion is
// true.
func (c *Chain) allowResize(ctx context.Context, pvc, oldPVC *corev1.PersistentVolumeClaim) (bool, error) {
	class, oldClass := volumehelpers.GetPersistentVolumeClaimClass(pvc), volumehelpers.GetPersistentVolumeClaimClass(oldPVC)
	if class == "" || class != oldClass {
		return false, nil
	}
	sc, found, err := getCachedInto[storagev1.StorageClass](ctx, c.store, &c.decoded, storageClassPrefix+class)
	if err != nil || !found {
		return false, err
	}
	return sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion, nil
}
