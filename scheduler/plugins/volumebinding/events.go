package volumebinding

import (
	"errors"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// EventsToRegister: a claim the pod uses appearing or changing, a storage
// class appearing or changing its topologies, any volume appearing or
// changing, and a node appearing or relabelled (volume node affinity) may
// each let the pod's claims bind.
func (*VolumeBinding) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.StorageClass, ActionType: framework.Add | framework.Update}, QueueingHintFn: isSchedulableAfterStorageClassChange},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolumeClaim, ActionType: framework.Add | framework.Update}, QueueingHintFn: framework.IsSchedulableAfterOwnClaimChange},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolume, ActionType: framework.Add | framework.Update}},
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeLabel}},
	}
}

// isSchedulableAfterStorageClassChange queues the pod for a new class, or a
// class whose allowed topologies changed (its binding mode is immutable).
func isSchedulableAfterStorageClassChange(_ *v1.Pod, oldObj, newObj any) (framework.QueueingHint, error) {
	oldClass, newClass, err := framework.As[*storagev1.StorageClass](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newClass == nil {
		return framework.Queue, errors.New("the event carries no storage class")
	}
	if oldClass == nil || !equality.Semantic.DeepEqual(oldClass.AllowedTopologies, newClass.AllowedTopologies) {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}
