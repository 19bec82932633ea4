package volumezone

import (
	"errors"
	"reflect"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// EventsToRegister, as kube-scheduler's with queueing hints: a node added
// or relabelled, the pod's claim added or changed (bound), a volume added
// or given other zone labels, and a WaitForFirstConsumer class added (a
// class's binding mode is immutable) may each let the pod fit.
func (*VolumeZone) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.StorageClass, ActionType: framework.Add}, QueueingHintFn: isSchedulableAfterStorageClassAdded},
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeLabel}},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolumeClaim, ActionType: framework.Add | framework.Update}, QueueingHintFn: framework.IsSchedulableAfterOwnClaimChange},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolume, ActionType: framework.Add | framework.Update}, QueueingHintFn: isSchedulableAfterPersistentVolumeChange},
	}
}

// isSchedulableAfterStorageClassAdded queues pod for a new
// WaitForFirstConsumer class, whose unbound claims the plugin skips.
func isSchedulableAfterStorageClassAdded(_ *v1.Pod, _, newObj any) (framework.QueueingHint, error) {
	_, class, err := framework.As[*storagev1.StorageClass](nil, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if class == nil {
		return framework.Queue, errors.New("the event carries no storage class")
	}
	if class.VolumeBindingMode == nil || *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		return framework.QueueSkip, nil
	}
	return framework.Queue, nil
}

// isSchedulableAfterPersistentVolumeChange queues pod for a new volume or
// one whose zone or region labels changed. As kube-scheduler, it does not
// look whether the pod uses the volume.
func isSchedulableAfterPersistentVolumeChange(_ *v1.Pod, oldObj, newObj any) (framework.QueueingHint, error) {
	oldPV, newPV, err := framework.As[*v1.PersistentVolume](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newPV == nil {
		return framework.Queue, errors.New("the event carries no volume")
	}
	if oldPV == nil || !reflect.DeepEqual(volumeTopologies(oldPV), volumeTopologies(newPV)) {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}
