package balancedallocation

import (
	"context"
	"math"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// Name is the plugin's registry name.
const Name = "NodeResourcesBalancedAllocation"

// BalancedAllocation implements Score.
type BalancedAllocation struct{}

// New builds the plugin.
func New(_ any, _ framework.Handle) (framework.Plugin, error) { return &BalancedAllocation{}, nil }

// Name implements framework.Plugin.
func (*BalancedAllocation) Name() string { return Name }

const preScoreKey framework.StateKey = "PreScore" + Name

type preScoreState struct{ req *framework.Resource }

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore computes the pod's requests once for all nodes.
func (*BalancedAllocation) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	state.Write(preScoreKey, &preScoreState{req: framework.PodRequests(pod)})
	return nil
}

// Score is (1 - standard deviation of the used fractions) × 100 over CPU and
// memory; fractions above 1 count as 1.
func (*BalancedAllocation) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	var req *framework.Resource
	if d, err := state.Read(preScoreKey); err == nil {
		if s, ok := d.(*preScoreState); ok {
			req = s.req
		}
	}
	if req == nil {
		req = framework.PodRequests(pod)
	}
	var fractions []float64
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		alloc := ni.Allocatable.Get(name)
		if alloc == 0 {
			continue
		}
		f := float64(ni.Requested.Get(name)+req.Get(name)) / float64(alloc)
		fractions = append(fractions, math.Min(f, 1))
	}
	var std float64
	switch len(fractions) {
	case 0, 1:
	case 2:
		std = math.Abs(fractions[0]-fractions[1]) / 2
	default:
		var mean float64
		for _, f := range fractions {
			mean += f
		}
		mean /= float64(len(fractions))
		for _, f := range fractions {
			std += (f - mean) * (f - mean)
		}
		std = math.Sqrt(std / float64(len(fractions)))
	}
	return int64((1 - std) * float64(framework.MaxNodeScore)), nil
}
