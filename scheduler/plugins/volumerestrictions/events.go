package volumerestrictions

import (
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// EventsToRegister, as kube-scheduler's: a placed pod deleted may release
// the claim (volumes are immutable, so updates are not), a new node may
// take the pod, and the claim the pod lacked may be created.
func (*VolumeRestrictions) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Delete}, QueueingHintFn: isSchedulableAfterPodDeleted},
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add}},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolumeClaim, ActionType: framework.Add}, QueueingHintFn: isSchedulableAfterPersistentVolumeClaimAdded},
	}
}

func claimNames(pod *v1.Pod) sets.Set[string] {
	names := sets.New[string]()
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			names.Insert(v.PersistentVolumeClaim.ClaimName)
		}
	}
	return names
}

// isSchedulableAfterPodDeleted queues pod when the deleted pod, in its
// namespace, used one of its claims. As kube-scheduler, the claim's access
// mode is not looked up: a shared claim name is enough.
func isSchedulableAfterPodDeleted(pod *v1.Pod, oldObj, _ any) (framework.QueueingHint, error) {
	deleted, _, err := framework.As[*v1.Pod](oldObj, nil)
	if err != nil {
		return framework.Queue, err
	}
	if deleted == nil {
		return framework.Queue, errors.New("the event carries no deleted pod")
	}
	if deleted.Namespace != pod.Namespace {
		return framework.QueueSkip, nil
	}
	if claimNames(pod).HasAny(claimNames(deleted).UnsortedList()...) {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

// isSchedulableAfterPersistentVolumeClaimAdded queues pod when the new
// claim is one of its own.
func isSchedulableAfterPersistentVolumeClaimAdded(pod *v1.Pod, _, newObj any) (framework.QueueingHint, error) {
	_, claim, err := framework.As[*v1.PersistentVolumeClaim](nil, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if claim == nil {
		return framework.Queue, errors.New("the event carries no claim")
	}
	if claim.Namespace == pod.Namespace && claimNames(pod).Has(claim.Name) {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}
