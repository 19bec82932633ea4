package runtime

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/cache"
	"github.com/skiffkube/skiff/scheduler/framework"
)

// filterAndScore is a plugin at Filter, PreScore and Score.
type filterAndScore struct{}

func (filterAndScore) Name() string { return "FilterAndScore" }
func (filterAndScore) Filter(context.Context, *framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status {
	return nil
}
func (filterAndScore) PreScore(context.Context, *framework.CycleState, *v1.Pod, []*framework.NodeInfo) *framework.Status {
	return nil
}
func (filterAndScore) Score(context.Context, *framework.CycleState, *v1.Pod, *framework.NodeInfo) (int64, *framework.Status) {
	return 0, nil
}

// NoScore keeps a plugin at its other points and out of PreScore and Score.
func TestNoScoreRunsThePluginOnlyAtItsOtherPoints(t *testing.T) {
	reg := Registry{"FilterAndScore": func(any, framework.Handle) (framework.Plugin, error) { return filterAndScore{}, nil }}
	for _, noScore := range []bool{false, true} {
		f, err := New(reg, []PluginConfig{{Name: "FilterAndScore", Weight: 2, NoScore: noScore}}, Options{Snapshot: cache.NewEmptySnapshot()})
		if err != nil {
			t.Fatal(err)
		}
		if len(f.filter) != 1 {
			t.Errorf("NoScore %v: %d filter plugins, want 1", noScore, len(f.filter))
		}
		if scores := len(f.score) + len(f.preScore); (scores == 0) != noScore {
			t.Errorf("NoScore %v: %d score and %d preScore plugins", noScore, len(f.score), len(f.preScore))
		}
		if f.HasScorePlugins() == noScore {
			t.Errorf("NoScore %v: HasScorePlugins() = %v", noScore, f.HasScorePlugins())
		}
	}
}
