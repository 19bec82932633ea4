package noderesourcesfit

import (
	"context"
	"fmt"
	"math"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
)

const (
	// Name is the plugin's registry name.
	Name = "NodeResourcesFit"
	// ErrReasonTooManyPods is the Filter reason when the node's pod capacity is used up.
	ErrReasonTooManyPods = "Too many pods"

	preFilterKey framework.StateKey = "PreFilter" + Name
)

// The reasons for the standard resources are constants: Filter runs for every
// node of every attempt and of every preemption dry run, and formatting the
// same three strings there again and again was a noticeable share of the
// dry run's CPU. Only extended resources, whose names are open-ended, are
// formatted (as kube-scheduler does).
const (
	errReasonInsufficientCPU              = "Insufficient " + string(v1.ResourceCPU)
	errReasonInsufficientMemory           = "Insufficient " + string(v1.ResourceMemory)
	errReasonInsufficientEphemeralStorage = "Insufficient " + string(v1.ResourceEphemeralStorage)
)

// ErrReasonInsufficient renders "Insufficient <resource>".
func ErrReasonInsufficient(name v1.ResourceName) string {
	switch name {
	case v1.ResourceCPU:
		return errReasonInsufficientCPU
	case v1.ResourceMemory:
		return errReasonInsufficientMemory
	case v1.ResourceEphemeralStorage:
		return errReasonInsufficientEphemeralStorage
	}
	return "Insufficient " + string(name)
}

// ScoringStrategy selects how nodes are ranked.
type ScoringStrategy string

const (
	// LeastAllocated prefers the emptiest nodes (spread).
	LeastAllocated ScoringStrategy = "LeastAllocated"
	// MostAllocated prefers the fullest nodes that still fit (bin-pack).
	MostAllocated ScoringStrategy = "MostAllocated"
	// RequestedToCapacityRatio scores each resource's use by a configured
	// shape (Args.Shape).
	RequestedToCapacityRatio ScoringStrategy = "RequestedToCapacityRatio"
)

// ResourceWeight weighs one resource in the score.
type ResourceWeight struct {
	Name   v1.ResourceName
	Weight int64
}

// DefaultResources are the resources scored when Args name none: CPU and
// memory, equally, as kube-scheduler's default.
func DefaultResources() []ResourceWeight {
	return []ResourceWeight{{v1.ResourceCPU, 1}, {v1.ResourceMemory, 1}}
}

// Args configure the plugin; the zero value is LeastAllocated over CPU and memory.
type Args struct {
	ScoringStrategy ScoringStrategy
	Resources       []ResourceWeight
	// Shape is RequestedToCapacityRatio's scoring function; only for that strategy.
	Shape []ShapePoint
	// IgnoredResources are extended resources Filter does not check (a
	// device plugin or an extender accounts for them instead).
	IgnoredResources []string
	// IgnoredResourceGroups are domains ("example.com") whose extended
	// resources Filter does not check.
	IgnoredResourceGroups []string
}

// Fit implements PreFilter, Filter and Score.
type Fit struct {
	strategy  ScoringStrategy
	resources []ResourceWeight
	shape     []ShapePoint
	// ignored and ignoredGroups are nil when nothing is ignored.
	ignored, ignoredGroups map[string]bool
}

// New builds the plugin from Args (or *Args, or nil for defaults).
func New(args any, _ framework.Handle) (framework.Plugin, error) {
	a, _, err := framework.PluginArgs[Args](Name, args)
	if err != nil {
		return nil, err
	}
	if a.ScoringStrategy == "" {
		a.ScoringStrategy = LeastAllocated
	}
	switch a.ScoringStrategy {
	case LeastAllocated, MostAllocated:
		if len(a.Shape) > 0 {
			return nil, fmt.Errorf("%s: a shape is only for %s", Name, RequestedToCapacityRatio)
		}
	case RequestedToCapacityRatio:
		if err := ValidateShape(a.Shape); err != nil {
			return nil, fmt.Errorf("%s: %s shape: %w", Name, RequestedToCapacityRatio, err)
		}
	default:
		return nil, fmt.Errorf("%s: scoring strategy %q is not one of %s, %s, %s", Name, a.ScoringStrategy, LeastAllocated, MostAllocated, RequestedToCapacityRatio)
	}
	if len(a.Resources) == 0 {
		a.Resources = DefaultResources()
	}
	for _, r := range a.Resources {
		if r.Weight <= 0 || r.Weight > 100 {
			return nil, fmt.Errorf("%s: weight of %s must be in 1..100, got %d", Name, r.Name, r.Weight)
		}
	}
	f := &Fit{strategy: a.ScoringStrategy, resources: a.Resources, shape: a.Shape}
	f.ignored, f.ignoredGroups = setOf(a.IgnoredResources), setOf(a.IgnoredResourceGroups)
	return f, nil
}

func setOf(names []string) map[string]bool {
	if len(names) == 0 {
		return nil
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}

// Name implements framework.Plugin.
func (*Fit) Name() string { return Name }

type preFilterState struct{ pi *framework.PodInfo }

func (s *preFilterState) Clone() framework.StateData { return s }

// PreFilter computes the pod's requests once.
func (*Fit) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	// Only the requests are needed; a full PodInfo would also parse affinity.
	state.Write(preFilterKey, &preFilterState{pi: &framework.PodInfo{Pod: pod,
		Requests: framework.PodRequestsFor(state, pod), NonZeroRequests: framework.PodNonZeroRequestsFor(state, pod)}})
	return nil, nil
}

func podInfo(state *framework.CycleState) (*framework.PodInfo, error) {
	d, err := state.Read(preFilterKey)
	if err != nil {
		return nil, err
	}
	s, ok := d.(*preFilterState)
	if !ok {
		return nil, fmt.Errorf("%s: unexpected state %T", Name, d)
	}
	return s.pi, nil
}

// Filter checks pod count and every requested resource not ignored; all
// shortfalls are reported, each as its own reason.
func (f *Fit) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	pi, err := podInfo(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	if reasons := f.insufficient(pi.Requests, ni); len(reasons) > 0 {
		return framework.NewStatus(framework.Unschedulable, reasons...)
	}
	return nil
}

// Insufficient lists why req does not fit on ni (empty when it fits),
// ignoring no resource.
func Insufficient(req *framework.Resource, ni *framework.NodeInfo) []string {
	return (&Fit{}).insufficient(req, ni)
}

func (f *Fit) insufficient(req *framework.Resource, ni *framework.NodeInfo) []string {
	var reasons []string
	alloc, used := ni.Allocatable, ni.Requested
	if len(ni.Pods)+1 > alloc.AllowedPodNumber {
		reasons = append(reasons, ErrReasonTooManyPods)
	}
	if req.MilliCPU > 0 && req.MilliCPU > alloc.MilliCPU-used.MilliCPU {
		reasons = append(reasons, errReasonInsufficientCPU)
	}
	if req.Memory > 0 && req.Memory > alloc.Memory-used.Memory {
		reasons = append(reasons, errReasonInsufficientMemory)
	}
	if req.EphemeralStorage > 0 && req.EphemeralStorage > alloc.EphemeralStorage-used.EphemeralStorage {
		reasons = append(reasons, errReasonInsufficientEphemeralStorage)
	}
	for name, q := range req.Scalar {
		if q > 0 && q > alloc.Scalar[name]-used.Scalar[name] && !f.ignores(name) {
			reasons = append(reasons, ErrReasonInsufficient(name))
		}
	}
	return reasons
}

// ignores reports an extended resource named, or in a domain named, in
// ignoredResources / ignoredResourceGroups. Hugepages are never ignored.
func (f *Fit) ignores(name v1.ResourceName) bool {
	if f.ignored == nil && f.ignoredGroups == nil {
		return false
	}
	if !framework.IsExtendedResource(name) {
		return false
	}
	if f.ignored[string(name)] {
		return true
	}
	domain, _, _ := strings.Cut(string(name), "/")
	return f.ignoredGroups[domain]
}

// Score ranks by the configured strategy: per resource, the share of
// allocatable left free (LeastAllocated) or used (MostAllocated) after placing
// the pod, or the shape at the percentage used (RequestedToCapacityRatio),
// averaged by weight. CPU and memory use the non-zero requests so
// request-less pods still count. As in kube-scheduler, an extended resource
// (or hugepages) the pod does not request is left out of the average: a pod
// without GPUs is not steered by how busy a node's GPUs are. Only CPU, memory,
// ephemeral storage and scalar resources are scored; a configured "pods"
// counts for nothing.
func (f *Fit) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	pi, err := podInfo(state)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	var sum, weights int64
	for _, r := range f.resources {
		switch {
		case r.Name == v1.ResourceCPU || r.Name == v1.ResourceMemory || r.Name == v1.ResourceEphemeralStorage:
		case framework.IsScalarResource(r.Name):
			if pi.Requests.Get(r.Name) == 0 {
				continue
			}
		default:
			// Anything else ("pods", a misspelt name) has no allocatable
			// to score against in kube-scheduler, so it is left out.
			continue
		}
		alloc := ni.Allocatable.Get(r.Name)
		if alloc == 0 {
			continue
		}
		var requested int64
		if r.Name == v1.ResourceCPU || r.Name == v1.ResourceMemory {
			requested = ni.NonZeroRequested.Get(r.Name) + pi.NonZeroRequests.Get(r.Name)
		} else {
			requested = ni.Requested.Get(r.Name) + pi.Requests.Get(r.Name)
		}
		if f.strategy == RequestedToCapacityRatio {
			s := ratioScore(f.shape, requested, alloc)
			if s == 0 {
				// As in kube-scheduler: a resource scoring 0 is left out
				// of the mean, weight and all.
				continue
			}
			sum += s * r.Weight
		} else {
			sum += resourceScore(f.strategy, requested, alloc) * r.Weight
		}
		weights += r.Weight
	}
	if weights == 0 {
		return 0, nil
	}
	if f.strategy == RequestedToCapacityRatio {
		return int64(math.Round(float64(sum) / float64(weights))), nil // rounded there, not truncated
	}
	return sum / weights, nil
}

func resourceScore(strategy ScoringStrategy, requested, capacity int64) int64 {
	if requested > capacity {
		if strategy == MostAllocated {
			return framework.MaxNodeScore
		}
		return 0
	}
	if strategy == MostAllocated {
		return requested * framework.MaxNodeScore / capacity
	}
	return (capacity - requested) * framework.MaxNodeScore / capacity
}
