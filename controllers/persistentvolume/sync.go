package persistentvolume

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	volumehelpers "k8s.io/component-helpers/storage/volume"
)

// Event reasons, as Kubernetes' PV controller records them.
const (
	reasonWaitForFirstConsumer = "WaitForFirstConsumer"
	reasonExternalProvisioning = "ExternalProvisioning"
	reasonFailedBinding        = "FailedBinding"
	reasonClaimLost            = "ClaimLost"
	reasonVolumeDelete         = "VolumeDelete"
	reasonVolumeFailedRecycle  = "VolumeFailedRecycle"
)

func (c *Controller) syncClaim(ctx context.Context, namespace, name string) error {
	claim, err := c.claims.PersistentVolumeClaims(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if claim.DeletionTimestamp != nil {
		return nil
	}
	if claim.Spec.VolumeName == "" {
		return c.syncUnboundClaim(ctx, claim)
	}
	return c.syncBoundClaim(ctx, claim)
}

// syncUnboundClaim finds a volume for a claim, or leaves it Pending for its
// class's provisioner (or for its first consumer to be scheduled).
func (c *Controller) syncUnboundClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	className := volumehelpers.GetPersistentVolumeClaimClass(claim)
	var class *storagev1.StorageClass
	if className != "" {
		class, _ = c.classes.Get(className)
	}
	delay := class != nil && class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
	var node *corev1.Node
	if selected := claim.Annotations[volumehelpers.AnnSelectedNode]; delay && selected != "" {
		// The scheduler picked a node: volumes are matched against it.
		n, err := c.nodes.Get(selected)
		if err == nil {
			node = n
		} else {
			node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: selected, Labels: map[string]string{corev1.LabelHostname: selected}}}
		}
	}
	volumes, err := c.volumes.List(labels.Everything())
	if err != nil {
		return err
	}
	candidates := volumes[:0:0]
	for _, v := range volumes {
		if volumehelpers.IsVolumeBoundToClaim(v, claim) || volumehelpers.CheckAccessModes(claim, v) {
			candidates = append(candidates, v)
		}
	}
	pv, err := volumehelpers.FindMatchingVolume(claim, candidates, node, nil, delay && node == nil, false)
	if err != nil {
		c.recorder.Event(claim, corev1.EventTypeWarning, reasonFailedBinding, err.Error())
		return c.setClaimPhase(ctx, claim, corev1.ClaimPending, nil)
	}
	if pv != nil {
		return c.bind(ctx, pv, claim)
	}
	// Nothing fits: wait.
	switch {
	case delay && node == nil:
		c.recorder.Event(claim, corev1.EventTypeNormal, reasonWaitForFirstConsumer, "waiting for first consumer to be created before binding")
	case class != nil && class.Provisioner != volumehelpers.NotSupportedProvisioner:
		if err := c.markForProvisioner(ctx, claim, class.Provisioner); err != nil {
			return err
		}
		c.recorder.Eventf(claim, corev1.EventTypeNormal, reasonExternalProvisioning,
			"Waiting for a volume to be created either by the external provisioner '%s' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.", class.Provisioner)
	case className == "" || class == nil:
		msg := "no persistent volumes available for this claim and no storage class is set"
		if className != "" {
			msg = fmt.Sprintf("storageclass.storage.k8s.io %q not found", className)
		}
		c.recorder.Event(claim, corev1.EventTypeWarning, reasonFailedBinding, msg)
	}
	return c.setClaimPhase(ctx, claim, corev1.ClaimPending, nil)
}

// markForProvisioner annotates a claim with the provisioner expected to serve
// it, as Kubernetes does for external provisioners.
func (c *Controller) markForProvisioner(ctx context.Context, claim *corev1.PersistentVolumeClaim, provisioner string) error {
	if claim.Annotations[volumehelpers.AnnStorageProvisioner] == provisioner && claim.Annotations[volumehelpers.AnnBetaStorageProvisioner] == provisioner {
		return nil
	}
	cl := claim.DeepCopy()
	metav1.SetMetaDataAnnotation(&cl.ObjectMeta, volumehelpers.AnnStorageProvisioner, provisioner)
	metav1.SetMetaDataAnnotation(&cl.ObjectMeta, volumehelpers.AnnBetaStorageProvisioner, provisioner)
	_, err := c.client.CoreV1().PersistentVolumeClaims(cl.Namespace).Update(ctx, cl, metav1.UpdateOptions{})
	return ignoreGone(err)
}

// syncBoundClaim keeps a claim that names a volume consistent with it.
func (c *Controller) syncBoundClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	pv, err := c.volumes.Get(claim.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		if claim.Status.Phase == corev1.ClaimBound || claim.Annotations[volumehelpers.AnnBindCompleted] != "" {
			if claim.Status.Phase != corev1.ClaimLost {
				c.recorder.Event(claim, corev1.EventTypeWarning, reasonClaimLost, "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
			}
			return c.setClaimPhase(ctx, claim, corev1.ClaimLost, nil)
		}
		// Pre-bound by the user to a volume that does not exist yet.
		return c.setClaimPhase(ctx, claim, corev1.ClaimPending, nil)
	}
	if err != nil {
		return err
	}
	switch {
	case pv.Spec.ClaimRef == nil:
		// The claim names the volume; finish the volume's side.
		return c.bind(ctx, pv, claim)
	case volumehelpers.IsVolumeBoundToClaim(pv, claim):
		return c.bind(ctx, pv, claim)
	default:
		c.recorder.Eventf(claim, corev1.EventTypeWarning, reasonFailedBinding, "volume %q already bound to a different claim.", pv.Name)
		return c.setClaimPhase(ctx, claim, corev1.ClaimPending, nil)
	}
}

// bind writes both sides of a binding in Kubernetes' order; each step is a
// no-op when already done.
func (c *Controller) bind(ctx context.Context, pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) error {
	bound, dirty, err := volumehelpers.GetBindVolumeToClaim(pv, claim)
	if err != nil {
		return err
	}
	if dirty {
		if bound, err = c.client.CoreV1().PersistentVolumes().Update(ctx, bound, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("binding volume %s to claim %s/%s: %w", pv.Name, claim.Namespace, claim.Name, ignoreGone(err))
		}
	}
	if bound.Status.Phase != corev1.VolumeBound {
		b := bound.DeepCopy()
		b.Status.Phase, b.Status.Reason, b.Status.Message = corev1.VolumeBound, "", ""
		now := metav1.Now()
		b.Status.LastPhaseTransitionTime = &now
		if _, err := c.client.CoreV1().PersistentVolumes().UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("volume %s status: %w", pv.Name, err)
		}
	}
	cl := claim
	if claim.Spec.VolumeName != pv.Name || claim.Annotations[volumehelpers.AnnBindCompleted] == "" {
		cl = claim.DeepCopy()
		if cl.Spec.VolumeName != pv.Name {
			cl.Spec.VolumeName = pv.Name
			metav1.SetMetaDataAnnotation(&cl.ObjectMeta, volumehelpers.AnnBoundByController, "yes")
		}
		metav1.SetMetaDataAnnotation(&cl.ObjectMeta, volumehelpers.AnnBindCompleted, "yes")
		if cl, err = c.client.CoreV1().PersistentVolumeClaims(cl.Namespace).Update(ctx, cl, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("binding claim %s/%s to volume %s: %w", claim.Namespace, claim.Name, pv.Name, ignoreGone(err))
		}
	}
	return c.setClaimPhase(ctx, cl, corev1.ClaimBound, pv)
}

// setClaimPhase writes a claim's phase; a Bound claim also reports the
// volume's capacity and access modes.
func (c *Controller) setClaimPhase(ctx context.Context, claim *corev1.PersistentVolumeClaim, phase corev1.PersistentVolumeClaimPhase, pv *corev1.PersistentVolume) error {
	st := claim.Status.DeepCopy()
	st.Phase = phase
	if pv != nil {
		st.Capacity = pv.Spec.Capacity.DeepCopy()
		st.AccessModes = append([]corev1.PersistentVolumeAccessMode(nil), pv.Spec.AccessModes...)
	} else if phase == corev1.ClaimPending {
		st.Capacity, st.AccessModes = nil, nil
	}
	if claimStatusEqual(&claim.Status, st) {
		return nil
	}
	cl := claim.DeepCopy()
	cl.Status = *st
	_, err := c.client.CoreV1().PersistentVolumeClaims(cl.Namespace).UpdateStatus(ctx, cl, metav1.UpdateOptions{})
	return ignoreGone(err)
}

func claimStatusEqual(a, b *corev1.PersistentVolumeClaimStatus) bool {
	if a.Phase != b.Phase || len(a.AccessModes) != len(b.AccessModes) || len(a.Capacity) != len(b.Capacity) {
		return false
	}
	for i := range a.AccessModes {
		if a.AccessModes[i] != b.AccessModes[i] {
			return false
		}
	}
	for k, v := range a.Capacity {
		if w, ok := b.Capacity[k]; !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

// syncVolume keeps a volume's phase and reclaims it once its claim is gone.
func (c *Controller) syncVolume(ctx context.Context, name string) error {
	pv, err := c.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pv.DeletionTimestamp != nil {
		return nil
	}
	ref := pv.Spec.ClaimRef
	if ref == nil {
		return c.setVolumePhase(ctx, pv, corev1.VolumeAvailable, "")
	}
	claim, err := c.claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if claim != nil && (ref.UID == "" || claim.UID == ref.UID) {
		switch claim.Spec.VolumeName {
		case "":
			// Pre-bound or half-bound: the claim's sync finishes it.
			if ref.UID == "" {
				return c.setVolumePhase(ctx, pv, corev1.VolumeAvailable, "")
			}
			c.queue.Add(claimKeyPrefix + claim.Namespace + "/" + claim.Name)
			return nil
		case pv.Name:
			return c.setVolumePhase(ctx, pv, corev1.VolumeBound, "")
		}
		// The claim went to another volume.
		switch {
		case pv.Annotations[volumehelpers.AnnDynamicallyProvisioned] != "":
			// Made for this claim, which does not need it: reclaim it
			// as if the claim were gone.
		case pv.Annotations[volumehelpers.AnnBoundByController] != "":
			// We set this claimRef: undo it, the volume is free again.
			v := pv.DeepCopy()
			v.Spec.ClaimRef = nil
			delete(v.Annotations, volumehelpers.AnnBoundByController)
			_, err := c.client.CoreV1().PersistentVolumes().Update(ctx, v, metav1.UpdateOptions{})
			return ignoreGone(err)
		default:
			return c.setVolumePhase(ctx, pv, corev1.VolumeAvailable, "")
		}
	} else if ref.UID == "" {
		// Pre-bound to a claim that does not exist yet.
		return c.setVolumePhase(ctx, pv, corev1.VolumeAvailable, "")
	}
	// The claim is gone (or bound elsewhere): the volume is released and
	// reclaimed.
	if err := c.setVolumePhase(ctx, pv, corev1.VolumeReleased, ""); err != nil {
		return err
	}
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case corev1.PersistentVolumeReclaimDelete:
		err := c.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pv.UID}})
		if err := ignoreGone(err); err != nil {
			c.recorder.Eventf(pv, corev1.EventTypeWarning, reasonVolumeDelete, "deleting volume: %v", err)
			return err
		}
	case corev1.PersistentVolumeReclaimRecycle:
		c.recorder.Event(pv, corev1.EventTypeWarning, reasonVolumeFailedRecycle, "recycling is not supported (deprecated in Kubernetes); use Delete or Retain")
	}
	return nil
}

func (c *Controller) setVolumePhase(ctx context.Context, pv *corev1.PersistentVolume, phase corev1.PersistentVolumePhase, msg string) error {
	if pv.Status.Phase == phase && pv.Status.Message == msg {
		return nil
	}
	v := pv.DeepCopy()
	v.Status.Phase, v.Status.Message, v.Status.Reason = phase, msg, ""
	now := metav1.Now()
	v.Status.LastPhaseTransitionTime = &now
	_, err := c.client.CoreV1().PersistentVolumes().UpdateStatus(ctx, v, metav1.UpdateOptions{})
	return ignoreGone(err)
}

// ignoreGone treats an object deleted under us as done: its own delete event
// brings the other side back to the queue.
func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
