package interpodaffinity

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// topologyScore accumulates weights per topology key and value.
type topologyScore map[string]map[string]int64

func (t topologyScore) add(node *v1.Node, key string, w int64) {
	v, ok := node.Labels[key]
	if !ok || w == 0 {
		return
	}
	if t[key] == nil {
		t[key] = map[string]int64{}
	}
	t[key][v] += w
}

type preScoreState struct{ scores topologyScore }

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore sums weights per topology domain from the pod's preferred terms
// and from placed pods' terms that select the pod (their required affinity
// weighing hardPodAffinityWeight). With ignorePreferredTermsOfExistingPods,
// a pod with no preferred terms of its own is not scored.
func (pl *InterPodAffinity) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	lister := pl.h.SnapshotLister()
	own := hasPreferredTerms(pod)
	if !own && (pl.ignoreExistingPreferred || len(lister.HavePodsWithAffinityList()) == 0) {
		return framework.NewStatus(framework.Skip)
	}
	pi := framework.NewPodInfo(pod)
	if pi.ParseError != nil {
		return framework.AsStatus(pi.ParseError)
	}
	nodes := lister.HavePodsWithAffinityList()
	if own {
		nodes = lister.List()
	}
	if len(nodes) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	ts := topologyScore{}
	incomingNS := pl.nsLabels(pod.Namespace)
	for _, ni := range nodes {
		node := ni.Node()
		list := ni.PodsWithAffinity
		if own {
			list = ni.Pods
		}
		for _, existing := range list {
			existingNS := pl.nsLabels(existing.Pod.Namespace)
			if own {
				scoreTerms(ts, node, pi.PreferredAffinityTerms, existing.Pod, existingNS, 1)
				scoreTerms(ts, node, pi.PreferredAntiAffinityTerms, existing.Pod, existingNS, -1)
			}
			scoreTerms(ts, node, existing.PreferredAffinityTerms, pod, incomingNS, 1)
			scoreTerms(ts, node, existing.PreferredAntiAffinityTerms, pod, incomingNS, -1)
			for i := range existing.RequiredAffinityTerms {
				t := &existing.RequiredAffinityTerms[i]
				if t.Matches(pod, incomingNS) {
					ts.add(node, t.TopologyKey, pl.hardWeight)
				}
			}
		}
	}
	if len(ts) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preScoreKey, &preScoreState{scores: ts})
	return nil
}

func scoreTerms(ts topologyScore, node *v1.Node, terms []framework.WeightedAffinityTerm, pod *v1.Pod, nsLabels labels.Set, sign int64) {
	for i := range terms {
		if terms[i].Matches(pod, nsLabels) {
			ts.add(node, terms[i].TopologyKey, sign*int64(terms[i].Weight))
		}
	}
}

// Score adds the weights of the node's domains.
func (pl *InterPodAffinity) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	d, err := state.Read(preScoreKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	s, ok := d.(*preScoreState)
	if !ok {
		return 0, framework.AsStatus(fmt.Errorf("%s: unexpected state %T", Name, d))
	}
	var sum int64
	for key, byValue := range s.scores {
		if v, ok := ni.Node().Labels[key]; ok {
			sum += byValue[v]
		}
	}
	return sum, nil
}

// NormalizeScore maps [min, max] onto [0, 100] (raw scores may be negative).
func (pl *InterPodAffinity) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores []framework.NodeScore) *framework.Status {
	if len(scores) == 0 {
		return nil
	}
	lo, hi := scores[0].Score, scores[0].Score
	for _, s := range scores {
		lo, hi = min(lo, s.Score), max(hi, s.Score)
	}
	for i := range scores {
		if hi == lo {
			scores[i].Score = 0
			continue
		}
		// In floating point, as kube-scheduler: its rounding (100 × 29/100 is 28.999…, so 28)
		// decides ties the same way.
		scores[i].Score = int64(float64(framework.MaxNodeScore) * (float64(scores[i].Score-lo) / float64(hi-lo)))
	}
	return nil
}
