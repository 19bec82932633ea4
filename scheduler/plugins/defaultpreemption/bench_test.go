package defaultpreemption

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/framework/runtime"
	"github.com/skiffkube/skiff/scheduler/plugins/noderesourcesfit"
	"github.com/skiffkube/skiff/scheduler/plugins/tainttoleration"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// BenchmarkFindCandidates is the dry run of one preemption on 1,000 full
// nodes, each holding one lower-priority pod whose eviction would make room:
// every node is a potential candidate, and the default DefaultPreemptionArgs
// ask for 100 of them.
func BenchmarkFindCandidates(b *testing.B) {
	var nodes []*framework.NodeInfo
	for i := range 1000 {
		name := fmt.Sprintf("n%d", i)
		nodes = append(nodes, schedtest.NodeInfo(schedtest.MakeNode().Name(name).Capacity("cpu", "2").Obj(),
			low("a-"+name, int32(i%7), "1"), low("b-"+name, int32(i%5), "1")))
	}
	reg := runtime.Registry{Name: New, noderesourcesfit.Name: noderesourcesfit.New, tainttoleration.Name: tainttoleration.New}
	f := schedtest.Framework(b, fake.NewClientset(), reg, []runtime.PluginConfig{{Name: tainttoleration.Name}, {Name: noderesourcesfit.Name}, {Name: Name}}, nodes...)
	pl := f.Plugin(Name).(*DefaultPreemption)
	pod := schedtest.MakePod().Name("vip").Priority(1000).Req("cpu", "1").Obj()
	ctx := context.Background()
	state := framework.NewCycleState()
	all := f.SnapshotLister().List()
	if _, s, _ := f.RunPreFilterPlugins(ctx, state, pod, all); !s.IsSuccess() {
		b.Fatalf("PreFilter: %v", s)
	}
	feasible, statuses, _, err := f.FindFeasibleNodes(ctx, state, pod, all, 0, 0)
	if err != nil || len(feasible) != 0 {
		b.Fatalf("the pod should fit nowhere before preemption (feasible %d, err %v)", len(feasible), err)
	}
	b.ReportAllocs()
	for b.Loop() {
		cs, _, err := pl.FindCandidates(ctx, state, pod, statuses)
		if err != nil || len(cs) == 0 {
			b.Fatalf("%d candidates, err %v", len(cs), err)
		}
	}
}
