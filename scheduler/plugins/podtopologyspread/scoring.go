package podtopologyspread

import (
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/skiffkube/skiff/scheduler/framework"
)

type preScoreState struct {
	constraints []constraint
	counts      []map[string]int64
	// weights favour constraints over many domains: log(domains + 2).
	weights []float64
}

func (s *preScoreState) Clone() framework.StateData { return s }

// ignored marks nodes lacking a constraint's label; NormalizeScore gives them 0.
const ignored = -1

// PreScore counts matching pods per domain for the soft constraints.
func (pl *PodTopologySpread) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	cs, err := parseConstraints(pod, v1.ScheduleAnyway)
	if err != nil {
		return framework.AsStatus(err)
	}
	if len(cs) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	s := &preScoreState{constraints: cs, counts: make([]map[string]int64, len(cs)), weights: make([]float64, len(cs))}
	for i := range s.counts {
		s.counts[i] = map[string]int64{}
	}
	aff := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, ni := range pl.h.SnapshotLister().List() {
		node := ni.Node()
		if !eligible(node, pod, cs, aff) {
			continue
		}
		for i, c := range cs {
			s.counts[i][node.Labels[c.key]] += countMatching(ni, pod.Namespace, c.selector)
		}
	}
	for i := range cs {
		s.weights[i] = math.Log(float64(len(s.counts[i]) + 2))
	}
	state.Write(preScoreKey, s)
	return nil
}

// Score is the weighted count of matching pods in the node's domains (fewer is better).
func (pl *PodTopologySpread) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	d, err := state.Read(preScoreKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	s, ok := d.(*preScoreState)
	if !ok {
		return 0, framework.AsStatus(fmt.Errorf("%s: unexpected state %T", Name, d))
	}
	var score float64
	for i, c := range s.constraints {
		v, ok := ni.Node().Labels[c.key]
		if !ok {
			return ignored, nil
		}
		score += float64(s.counts[i][v]+c.maxSkew-1) * s.weights[i]
	}
	return int64(math.Round(score)), nil
}

// NormalizeScore reverses: the least crowded domain gets MaxNodeScore.
func (pl *PodTopologySpread) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores []framework.NodeScore) *framework.Status {
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, s := range scores {
		if s.Score == ignored {
			continue
		}
		lo, hi = min(lo, s.Score), max(hi, s.Score)
	}
	for i := range scores {
		switch {
		case scores[i].Score == ignored:
			scores[i].Score = 0
		case hi == 0:
			scores[i].Score = framework.MaxNodeScore
		default:
			scores[i].Score = framework.MaxNodeScore * (hi + lo - scores[i].Score) / hi
		}
	}
	return nil
}
