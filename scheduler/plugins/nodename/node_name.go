package nodename

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
)

const (
	// Name is the plugin's registry name.
	Name = "NodeName"
	// ErrReason is the Filter reason.
	ErrReason = "node(s) didn't match the requested node name"
)

// NodeName implements Filter.
type NodeName struct{}

// New builds the plugin.
func New(_ any, _ framework.Handle) (framework.Plugin, error) { return &NodeName{}, nil }

// Name implements framework.Plugin.
func (*NodeName) Name() string { return Name }

// EventsToRegister: only a new node can be the one the pod names; the
// pod is retried for any, as in kube-scheduler (no hint).
func (*NodeName) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add}},
	}
}

// Filter rejects every node but the requested one.
func (*NodeName) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	if pod.Spec.NodeName == "" || pod.Spec.NodeName == ni.Node().Name {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
}
