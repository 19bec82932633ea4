package schedulinggates

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// Name is the plugin's registry name.
const Name = "SchedulingGates"

// SchedulingGates implements PreEnqueue.
type SchedulingGates struct{}

// New builds the plugin.
func New(_ any, _ framework.Handle) (framework.Plugin, error) { return &SchedulingGates{}, nil }

// Name implements framework.Plugin.
func (*SchedulingGates) Name() string { return Name }

// PreEnqueue keeps a gated pod waiting, naming its gates as kube-scheduler does.
func (*SchedulingGates) PreEnqueue(_ context.Context, pod *v1.Pod) *framework.Status {
	if len(pod.Spec.SchedulingGates) == 0 {
		return nil
	}
	gates := make([]string, 0, len(pod.Spec.SchedulingGates))
	for _, g := range pod.Spec.SchedulingGates {
		gates = append(gates, g.Name)
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("waiting for scheduling gates: %v", gates))
}
