package nodeunschedulable

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/skiffkube/skiff/scheduler/framework"
)

const (
	// Name is the plugin's registry name.
	Name = "NodeUnschedulable"
	// ErrReasonUnschedulable is the Filter reason.
	ErrReasonUnschedulable = "node(s) were unschedulable"
)

// NodeUnschedulable implements Filter.
type NodeUnschedulable struct{}

// New builds the plugin.
func New(_ any, _ framework.Handle) (framework.Plugin, error) { return &NodeUnschedulable{}, nil }

// Name implements framework.Plugin.
func (*NodeUnschedulable) Name() string { return Name }

var unschedulableTaint = v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}

// EventsToRegister: a node that appears, or is uncordoned (a taint change
// to kube-scheduler and to skiff's events), may take the pod. (A pod's own
// new toleration reaches the queue as an update of the pod.)
func (*NodeUnschedulable) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeTaint}, QueueingHintFn: isSchedulableAfterNodeChange},
	}
}

// isSchedulableAfterNodeChange queues the pod for a schedulable node added,
// or a node going from unschedulable to schedulable.
func isSchedulableAfterNodeChange(_ *v1.Pod, oldObj, newObj any) (framework.QueueingHint, error) {
	oldNode, newNode, err := framework.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newNode == nil {
		return framework.Queue, errors.New("the event carries no node")
	}
	if !newNode.Spec.Unschedulable && (oldNode == nil || oldNode.Spec.Unschedulable) {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

// Filter rejects cordoned nodes unless the pod tolerates the unschedulable taint.
func (*NodeUnschedulable) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	if !ni.Unschedulable() {
		return nil
	}
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].ToleratesTaint(klog.Background(), &unschedulableTaint, false) {
			return nil
		}
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnschedulable)
}
