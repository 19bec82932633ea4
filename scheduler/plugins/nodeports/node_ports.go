package nodeports

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
)

const (
	// Name is the plugin's registry name.
	Name = "NodePorts"
	// ErrReason is the Filter reason.
	ErrReason = "node(s) didn't have free ports for the requested pod ports"

	stateKey framework.StateKey = "PreFilter" + Name
)

type wantedPorts []v1.ContainerPort

func (w wantedPorts) Clone() framework.StateData { return w }

// NodePorts implements PreFilter and Filter.
type NodePorts struct{}

// New builds the plugin.
func New(_ any, _ framework.Handle) (framework.Plugin, error) { return &NodePorts{}, nil }

// Name implements framework.Plugin.
func (*NodePorts) Name() string { return Name }

// PreFilter collects the pod's host ports once; a pod without any skips Filter.
func (*NodePorts) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	ports := portsOf(pod)
	if len(ports) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(stateKey, ports)
	return nil, nil
}

// Filter rejects nodes where a wanted port is taken.
func (*NodePorts) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	d, err := state.Read(stateKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	ports, ok := d.(wantedPorts)
	if !ok {
		return framework.AsStatus(fmt.Errorf("%s: unexpected state %T", Name, d))
	}
	if ports.conflict(ni.UsedPorts) {
		return framework.NewStatus(framework.Unschedulable, ErrReason)
	}
	return nil
}

func portsOf(pod *v1.Pod) wantedPorts {
	var ports wantedPorts
	framework.ForEachHostPort(pod, func(p *v1.ContainerPort) { ports = append(ports, *p) })
	return ports
}

// conflict reports a wanted port already in use.
func (w wantedPorts) conflict(used framework.HostPortInfo) bool {
	for _, p := range w {
		if used.CheckConflict(p.HostIP, string(p.Protocol), p.HostPort) {
			return true
		}
	}
	return false
}

// EventsToRegister: a port is freed only when the pod holding it goes
// (ports are immutable); a new node has every port free, and is retried
// without a hint, as in kube-scheduler.
func (*NodePorts) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Delete}, QueueingHintFn: isSchedulableAfterPodDeleted},
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add}},
	}
}

// isSchedulableAfterPodDeleted queues the pod when the deleted pod was
// placed (or nominated) and held a host port the pod wants.
func isSchedulableAfterPodDeleted(pod *v1.Pod, oldObj, _ any) (framework.QueueingHint, error) {
	deleted, _, err := framework.As[*v1.Pod](oldObj, nil)
	if err != nil {
		return framework.Queue, err
	}
	if deleted == nil {
		return framework.Queue, errors.New("the event carries no deleted pod")
	}
	if deleted.Spec.NodeName == "" && deleted.Status.NominatedNodeName == "" {
		return framework.QueueSkip, nil
	}
	freed := framework.HostPortInfo{}
	freed.AddPod(deleted)
	if len(freed) == 0 || !portsOf(pod).conflict(freed) {
		return framework.QueueSkip, nil
	}
	return framework.Queue, nil
}
