package framework

import (
	"errors"
	"slices"

	v1 "k8s.io/api/core/v1"
)

// PodClaimNames lists the PersistentVolumeClaims the pod's volumes name, in
// volume order: what the volume plugins (VolumeBinding, VolumeZone) look up.
func PodClaimNames(pod *v1.Pod) []string {
	var out []string
	for _, vol := range pod.Spec.Volumes {
		if vol.PersistentVolumeClaim != nil {
			out = append(out, vol.PersistentVolumeClaim.ClaimName)
		}
	}
	return out
}

// IsSchedulableAfterOwnClaimChange is the queueing hint of the volume plugins
// for a claim added or updated: it queues pod when the claim is one of its
// own (almost any change of it may let the pod through), as kube-scheduler's
// VolumeBinding and VolumeZone hints do.
func IsSchedulableAfterOwnClaimChange(pod *v1.Pod, oldObj, newObj any) (QueueingHint, error) {
	_, claim, err := As[*v1.PersistentVolumeClaim](oldObj, newObj)
	if err != nil {
		return Queue, err
	}
	if claim == nil {
		return Queue, errors.New("the event carries no claim")
	}
	if claim.Namespace == pod.Namespace && slices.Contains(PodClaimNames(pod), claim.Name) {
		return Queue, nil
	}
	return QueueSkip, nil
}
