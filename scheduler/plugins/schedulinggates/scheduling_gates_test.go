package schedulinggates

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

func TestPreEnqueue(t *testing.T) {
	p, _ := New(nil, nil)
	pl := p.(framework.PreEnqueuePlugin)
	if s := pl.PreEnqueue(context.Background(), schedtest.MakePod().Obj()); !s.IsSuccess() {
		t.Errorf("an ungated pod: %v", s)
	}
	gated := schedtest.MakePod().Obj()
	gated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/quota"}, {Name: "ready"}}
	if got, want := schedtest.StatusString(pl.PreEnqueue(context.Background(), gated)), "UnschedulableAndUnresolvable: waiting for scheduling gates: [example.com/quota ready]"; got != want {
		t.Errorf("a gated pod: %q, want %q", got, want)
	}
}
