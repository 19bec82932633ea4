package schedtest

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// RunFilter runs p's PreFilter (if any) and Filter for pod on ni, as the
// runtime would: a PreFilter Skip means the node passes, a PreFilter
// rejection is returned as is.
func RunFilter(t testing.TB, p framework.Plugin, pod *v1.Pod, ni *framework.NodeInfo, all ...*framework.NodeInfo) *framework.Status {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	if pf, ok := p.(framework.PreFilterPlugin); ok {
		_, s := pf.PreFilter(ctx, state, pod, all)
		if s.IsSkip() {
			return nil
		}
		if !s.IsSuccess() {
			return s
		}
	}
	f, ok := p.(framework.FilterPlugin)
	if !ok {
		t.Fatalf("%s is not a filter plugin", p.Name())
	}
	return f.Filter(ctx, state, pod, ni)
}

// RunScore runs p's PreFilter (so state a Score may share is there),
// PreScore, Score on each node and NormalizeScore, returning final scores by
// node name. A PreScore Skip yields no scores.
func RunScore(t testing.TB, p framework.Plugin, pod *v1.Pod, nodes ...*framework.NodeInfo) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	if pf, ok := p.(framework.PreFilterPlugin); ok {
		if _, s := pf.PreFilter(ctx, state, pod, nodes); !s.IsSuccess() && !s.IsSkip() {
			t.Fatalf("PreFilter: %v", s)
		}
	}
	if ps, ok := p.(framework.PreScorePlugin); ok {
		s := ps.PreScore(ctx, state, pod, nodes)
		if s.IsSkip() {
			return nil
		}
		if !s.IsSuccess() {
			t.Fatalf("PreScore: %v", s)
		}
	}
	sp, ok := p.(framework.ScorePlugin)
	if !ok {
		t.Fatalf("%s is not a score plugin", p.Name())
	}
	scores := make([]framework.NodeScore, len(nodes))
	for i, ni := range nodes {
		sc, s := sp.Score(ctx, state, pod, ni)
		if !s.IsSuccess() {
			t.Fatalf("Score on %s: %v", ni.Node().Name, s)
		}
		scores[i] = framework.NodeScore{Name: ni.Node().Name, Score: sc}
	}
	if n, ok := p.(framework.ScoreNormalizer); ok {
		if s := n.NormalizeScore(ctx, state, pod, scores); !s.IsSuccess() {
			t.Fatalf("NormalizeScore: %v", s)
		}
	}
	out := map[string]int64{}
	for _, s := range scores {
		out[s.Name] = s.Score
	}
	return out
}

// StatusString renders a status for comparison in tables: "" for success,
// otherwise "<Code>: <reasons>".
func StatusString(s *framework.Status) string {
	if s.IsSuccess() {
		return ""
	}
	return s.Code().String() + ": " + s.Message()
}
