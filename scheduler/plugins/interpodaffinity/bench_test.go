package interpodaffinity

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// BenchmarkFilterOnePerNode is one scheduling cycle's PreFilter and Filter
// for the next replica of a workload keeping one pod per node (required
// anti-affinity to its own label by hostname) on 1,000 nodes, half of
// which hold one, filtering the ~420 nodes the default
// percentageOfNodesToScore visits.
func BenchmarkFilterOnePerNode(b *testing.B) {
	replica := func(name string) *v1.Pod {
		return schedtest.MakePod().Name(name).Label("app", "web").PodAntiAffinity(v1.LabelHostname, "app", "web").Obj()
	}
	var nodes []*framework.NodeInfo
	for i := range 1000 {
		node := schedtest.MakeNode().Name(fmt.Sprintf("n%d", i)).Label(zone, fmt.Sprintf("z%d", i%3)).Obj()
		var pods []*v1.Pod
		if i%2 == 0 {
			pods = append(pods, replica(fmt.Sprintf("w%d", i)))
		}
		nodes = append(nodes, schedtest.NodeInfo(node, pods...))
	}
	p, err := New(nil, schedtest.Handle(b, nodes...))
	if err != nil {
		b.Fatal(err)
	}
	pl := p.(*InterPodAffinity)
	pod := replica("new")
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
