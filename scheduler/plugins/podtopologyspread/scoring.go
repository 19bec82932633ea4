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
	// requireAll: a node lacking any constraint's label is not scored. All
	// but the system defaults require it; with those a node without a zone
	// is still spread by hostname.
	requireAll bool
	// counts[i] maps the domains of constraint i that feasible nodes are in
	// to their matching pods (hostname constraints count in Score); a node
	// lacking the label is in the domain "".
	counts []map[string]int64
	// weights favour constraints over many domains: log(domains + 2), the
	// domains being those of the feasible nodes.
	weights []float64
}

func (s *preScoreState) Clone() framework.StateData { return s }

// ignored marks nodes lacking a constraint's label; NormalizeScore gives them 0.
const ignored = -1

// PreScore counts matching pods per domain for the soft constraints: the
// pod's own, or the default ones when it has none.
func (pl *PodTopologySpread) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, feasible []*framework.NodeInfo) *framework.Status {
	// Only kube-scheduler's own defaults score a node lacking some of the
	// keys (a node without a zone is still spread by hostname).
	requireAll := len(pod.Spec.TopologySpreadConstraints) > 0 || !pl.systemDefaulted
	cs, err := pl.podConstraints(pod, v1.ScheduleAnyway)
	if err != nil {
		return framework.AsStatus(err)
	}
	if len(cs) == 0 || len(feasible) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	s := &preScoreState{constraints: cs, requireAll: requireAll, counts: make([]map[string]int64, len(cs)), weights: make([]float64, len(cs))}
	sizes := make([]int, len(cs))
	for i := range s.counts {
		s.counts[i] = map[string]int64{}
	}
	scored := 0
	for _, ni := range feasible {
		node := ni.Node()
		if requireAll && !hasAllKeys(node, cs) {
			continue
		}
		scored++
		for i := range cs {
			if cs[i].key == v1.LabelHostname {
				continue
			}
			// A node without the label is in the domain "", as in
			// kube-scheduler (only the system defaults get here with one):
			// with the nodes labelled "" it is one domain for the weight
			// and the counts, though only those are scored on it.
			if v := node.Labels[cs[i].key]; !hasDomain(s.counts[i], v) {
				s.counts[i][v] = 0
				sizes[i]++
			}
		}
	}
	for i := range cs {
		size := sizes[i]
		if cs[i].key == v1.LabelHostname {
			size = scored
		}
		s.weights[i] = math.Log(float64(size + 2))
	}
	aff := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, ni := range pl.h.SnapshotLister().List() {
		node := ni.Node()
		if requireAll && !hasAllKeys(node, cs) {
			continue
		}
		for i := range cs {
			c := &cs[i]
			if c.key == v1.LabelHostname {
				continue
			}
			v := node.Labels[c.key]
			if !hasDomain(s.counts[i], v) || !c.includes(node, pod, aff) {
				continue
			}
			s.counts[i][v] += countMatching(ni, pod.Namespace, c.selector)
		}
	}
	state.Write(preScoreKey, s)
	return nil
}

func hasDomain(m map[string]int64, v string) bool {
	_, ok := m[v]
	return ok
}

// Score is kube-scheduler's: per constraint, the matching pods in the node's
// domain times the constraint's weight, plus maxSkew-1 (which waters down
// small differences); fewer is better.
func (pl *PodTopologySpread) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	d, err := state.Read(preScoreKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	s, ok := d.(*preScoreState)
	if !ok {
		return 0, framework.AsStatus(fmt.Errorf("%s: unexpected state %T", Name, d))
	}
	node := ni.Node()
	if s.requireAll && !hasAllKeys(node, s.constraints) {
		return ignored, nil
	}
	var score float64
	for i := range s.constraints {
		c := &s.constraints[i]
		v, ok := node.Labels[c.key]
		if !ok {
			continue
		}
		var n int64
		if c.key == v1.LabelHostname {
			n = countMatching(ni, pod.Namespace, c.selector)
		} else {
			n = s.counts[i][v]
		}
		score += float64(n)*s.weights[i] + float64(c.maxSkew-1)
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
