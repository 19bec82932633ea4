package podtopologyspread

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// BenchmarkFilterHostnameSpread is one scheduling cycle's PreFilter and
// Filter for a pod spread over 1,000 nodes by hostname, filtering the ~420
// nodes the default percentageOfNodesToScore visits.
func BenchmarkFilterHostnameSpread(b *testing.B) {
	var nodes []*framework.NodeInfo
	for i := range 1000 {
		node := schedtest.MakeNode().Name(fmt.Sprintf("n%d", i)).Label(zone, fmt.Sprintf("z%d", i%3)).Obj()
		nodes = append(nodes, schedtest.NodeInfo(node, web(fmt.Sprintf("w%d", i))))
	}
	p, err := New(nil, schedtest.Handle(b, nodes...))
	if err != nil {
		b.Fatal(err)
	}
	pl := p.(*PodTopologySpread)
	pod := schedtest.MakePod().Name("new").Label("app", "web").SpreadConstraint(1, v1.LabelHostname, v1.DoNotSchedule, "app", "web").Obj()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		state := framework.NewCycleState()
		if _, s := pl.PreFilter(ctx, state, pod, nodes); !s.IsSuccess() {
			b.Fatal(s)
		}
		for _, ni := range nodes[:420] {
			pl.Filter(ctx, state, pod, ni)
		}
	}
}
