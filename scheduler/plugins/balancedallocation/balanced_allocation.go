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

// PreScore computes the pod's requests once for all nodes. A pod requesting
// neither CPU nor memory is not scored, as in kube-scheduler: it changes no
// node's balance, and scoring it would send every such pod to the same
// best-balanced node (kubernetes/kubernetes#129138).
func (*BalancedAllocation) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	req := framework.PodRequestsFor(state, pod)
	if req.MilliCPU == 0 && req.Memory == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preScoreKey, &preScoreState{req: req})
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
	// Two resources, so the standard deviation of their fractions is half
	// their difference; with one (the node lacks the other) it is zero.
	// Fields, not a slice: this runs for every scored node of every pod.
	var fractions [2]float64
	n := 0
	if alloc := ni.Allocatable.MilliCPU; alloc != 0 {
		fractions[n] = math.Min(float64(ni.Requested.MilliCPU+req.MilliCPU)/float64(alloc), 1)
		n++
	}
	if alloc := ni.Allocatable.Memory; alloc != 0 {
		fractions[n] = math.Min(float64(ni.Requested.Memory+req.Memory)/float64(alloc), 1)
		n++
	}
	var std float64
	if n == 2 {
		std = math.Abs(fractions[0]-fractions[1]) / 2
	}
	return int64((1 - std) * float64(framework.MaxNodeScore)), nil
}
