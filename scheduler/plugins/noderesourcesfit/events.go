package noderesourcesfit

import (
	"errors"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// EventsToRegister: room appears when a placed pod goes or shrinks, or a node
// appears or gains allocatable.
func (*Fit) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Delete | framework.UpdatePodScaleDown}, QueueingHintFn: isSchedulableAfterPodEvent},
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeAllocatable}, QueueingHintFn: isSchedulableAfterNodeChange},
	}
}

// isSchedulableAfterPodEvent queues the pod when a placed (or nominated) pod
// is deleted, whatever it requested, as kube-scheduler does, or when a
// placed pod now requests less of a resource the pod requests.
func isSchedulableAfterPodEvent(pod *v1.Pod, oldObj, newObj any) (framework.QueueingHint, error) {
	oldPod, newPod, err := framework.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if oldPod == nil {
		return framework.Queue, errors.New("the event carries no old pod")
	}
	if newPod == nil {
		if oldPod.Spec.NodeName == "" && oldPod.Status.NominatedNodeName == "" {
			return framework.QueueSkip, nil
		}
		return framework.Queue, nil
	}
	if newPod.UID == pod.UID {
		return framework.Queue, nil
	}
	if newPod.Spec.NodeName == "" {
		return framework.QueueSkip, nil
	}
	if largerFor(framework.PodRequests(pod), framework.PodRequests(oldPod), framework.PodRequests(newPod)) {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

// largerFor reports whether a has more than b of some resource want
// requests.
func largerFor(want, a, b *framework.Resource) bool {
	if want.MilliCPU > 0 && a.MilliCPU > b.MilliCPU ||
		want.Memory > 0 && a.Memory > b.Memory ||
		want.EphemeralStorage > 0 && a.EphemeralStorage > b.EphemeralStorage {
		return true
	}
	for name, q := range want.Scalar {
		if q > 0 && a.Scalar[name] > b.Scalar[name] {
			return true
		}
	}
	return false
}

// isSchedulableAfterNodeChange queues the pod when the node, empty, has the
// allocatable to hold it (Filter's own check, ignoring nothing) and is new or
// gained pod capacity or some resource the pod requests.
func isSchedulableAfterNodeChange(pod *v1.Pod, oldObj, newObj any) (framework.QueueingHint, error) {
	oldNode, newNode, err := framework.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newNode == nil {
		return framework.Queue, errors.New("the event carries no node")
	}
	want := framework.PodRequests(pod)
	empty := framework.NewNodeInfo()
	empty.SetNode(newNode)
	if len(Insufficient(want, empty)) > 0 {
		return framework.QueueSkip, nil
	}
	if oldNode == nil {
		return framework.Queue, nil
	}
	before, after := framework.NewResource(oldNode.Status.Allocatable), empty.Allocatable
	if after.AllowedPodNumber > before.AllowedPodNumber || largerFor(want, after, before) {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}
