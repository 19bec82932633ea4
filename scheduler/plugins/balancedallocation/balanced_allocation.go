package balancedallocation

import (
	"context"
	"math"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// Name is the plugin's registry name.
const Name = "NodeResourcesBalancedAllocation"

// Args configure the plugin; the zero value balances CPU and memory.
type Args struct {
	// Resources are the resources whose used fractions are balanced
	// (kube-scheduler's NodeResourcesBalancedAllocationArgs.resources, whose
	// weights must all be 1).
	Resources []v1.ResourceName
}

// DefaultResources are balanced when Args name none, as kube-scheduler's default.
func DefaultResources() []v1.ResourceName {
	return []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}
}

// BalancedAllocation implements PreScore and Score.
type BalancedAllocation struct {
	resources []v1.ResourceName
}

// New builds the plugin from Args (or *Args, or nil for defaults).
func New(args any, _ framework.Handle) (framework.Plugin, error) {
	a, _, err := framework.PluginArgs[Args](Name, args)
	if err != nil {
		return nil, err
	}
	if len(a.Resources) == 0 {
		a.Resources = DefaultResources()
	}
	return &BalancedAllocation{resources: a.Resources}, nil
}

// Name implements framework.Plugin.
func (*BalancedAllocation) Name() string { return Name }

const preScoreKey framework.StateKey = "PreScore" + Name

type preScoreState struct{ req *framework.Resource }

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore computes the pod's requests once for all nodes. A pod requesting
// none of the balanced resources is not scored, as in kube-scheduler: it
// changes no node's balance, and scoring it would send every such pod to the
// same best-balanced node (kubernetes/kubernetes#129138).
func (ba *BalancedAllocation) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	req := framework.PodRequestsFor(state, pod)
	if !ba.requestsAny(req) {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preScoreKey, &preScoreState{req: req})
	return nil
}

func (ba *BalancedAllocation) requestsAny(req *framework.Resource) bool {
	for _, name := range ba.resources {
		if req.Get(name) != 0 {
			return true
		}
	}
	return false
}

// Score is (1 - standard deviation of the used fractions) × 100 over the
// balanced resources the node has; fractions above 1 count as 1. As in
// kube-scheduler, an extended resource (or hugepages) the pod does not
// request is left out, and so is any name other than CPU, memory,
// ephemeral storage or a scalar resource.
func (ba *BalancedAllocation) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	var req *framework.Resource
	if d, err := state.Read(preScoreKey); err == nil {
		if s, ok := d.(*preScoreState); ok {
			req = s.req
		}
	}
	if req == nil {
		req = framework.PodRequests(pod)
		if !ba.requestsAny(req) {
			return 0, nil
		}
	}
	// This runs for every scored node of every pod: the fractions live on
	// the stack for the usual handful of resources.
	var buf [4]float64
	fractions := buf[:0]
	var total float64
	for _, name := range ba.resources {
		switch {
		case name == v1.ResourceCPU || name == v1.ResourceMemory || name == v1.ResourceEphemeralStorage:
		case framework.IsScalarResource(name):
			if req.Get(name) == 0 {
				continue
			}
		default:
			continue
		}
		alloc := ni.Allocatable.Get(name)
		if alloc == 0 {
			continue
		}
		f := math.Min(float64(ni.Requested.Get(name)+req.Get(name))/float64(alloc), 1)
		fractions = append(fractions, f)
		total += f
	}
	// With two resources the standard deviation is half their difference;
	// with one (or none) there is nothing to balance.
	var std float64
	switch n := len(fractions); {
	case n == 2:
		std = math.Abs(fractions[0]-fractions[1]) / 2
	case n > 2:
		mean := total / float64(n)
		var sum float64
		for _, f := range fractions {
			sum += (f - mean) * (f - mean)
		}
		std = math.Sqrt(sum / float64(n))
	}
	return int64((1 - std) * float64(framework.MaxNodeScore)), nil
}
