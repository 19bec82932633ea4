package nodeports

import (
	"context"
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
	var ports wantedPorts
	framework.ForEachHostPort(pod, func(p *v1.ContainerPort) { ports = append(ports, *p) })
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
	for _, p := range ports {
		if ni.UsedPorts.CheckConflict(p.HostIP, string(p.Protocol), p.HostPort) {
			return framework.NewStatus(framework.Unschedulable, ErrReason)
		}
	}
	return nil
}
