package defaultpreemption

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/framework/runtime"
	"github.com/skiffkube/skiff/scheduler/plugins/noderesourcesfit"
	"github.com/skiffkube/skiff/scheduler/plugins/tainttoleration"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

func low(name string, prio int32, cpu string) *v1.Pod {
	return schedtest.MakePod().Name(name).Priority(prio).Req("cpu", cpu).Obj()
}

// setup runs a real framework (NodeResourcesFit, TaintToleration, this
// plugin) over the nodes, with the placed pods also in the fake API.
func setup(t *testing.T, nodes ...*framework.NodeInfo) (*runtime.Framework, *fake.Clientset) {
	var objs []kruntime.Object
	for _, ni := range nodes {
		for _, p := range ni.Pods {
			objs = append(objs, p.Pod)
		}
	}
	cs := fake.NewClientset(objs...)
	reg := runtime.Registry{Name: New, noderesourcesfit.Name: noderesourcesfit.New, tainttoleration.Name: tainttoleration.New}
	f := schedtest.Framework(t, cs, reg, []runtime.PluginConfig{{Name: tainttoleration.Name}, {Name: noderesourcesfit.Name}, {Name: Name}}, nodes...)
	return f, cs
}

// postFilter filters every node like the scheduler would, then preempts.
func postFilter(t *testing.T, f *runtime.Framework, pod *v1.Pod) (*framework.PostFilterResult, *framework.Status) {
	ctx := context.Background()
	state := framework.NewCycleState()
	nodes := f.SnapshotLister().List()
	if _, s := f.RunPreFilterPlugins(ctx, state, pod, nodes); !s.IsSuccess() {
		t.Fatalf("PreFilter: %v", s)
	}
	feasible, statuses, _, err := f.FindFeasibleNodes(ctx, state, pod, nodes, 0, 0)
	if err != nil || len(feasible) != 0 {
		t.Fatalf("the pod should fit nowhere before preemption (feasible %d, err %v)", len(feasible), err)
	}
	return f.RunPostFilterPlugins(ctx, state, pod, statuses)
}

func TestPreemptionPicksTheNodeWithTheLeastImportantVictims(t *testing.T) {
	node := func(name string) *v1.Node { return schedtest.MakeNode().Name(name).Capacity("cpu", "2").Obj() }
	nodes := []*framework.NodeInfo{
		schedtest.NodeInfo(node("n1"), low("a1", 50, "1"), low("a2", 60, "1")),
		schedtest.NodeInfo(node("n2"), low("b1", 10, "1"), low("b2", 900, "1")),
		schedtest.NodeInfo(node("n3"), low("c1", 2000, "2")),
	}
	f, cs := setup(t, nodes...)
	res, s := postFilter(t, f, schedtest.MakePod().Name("vip").Priority(1000).Req("cpu", "1").Obj())
	if !s.IsSuccess() || res == nil || res.NominatedNodeName != "n2" {
		t.Fatalf("result %+v status %v, want n2 nominated", res, s)
	}
	pods, _ := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	left := map[string]bool{}
	for _, p := range pods.Items {
		left[p.Name] = true
	}
	if left["b1"] || !left["b2"] || !left["a1"] || !left["a2"] || !left["c1"] {
		t.Fatalf("pods left = %v, want only b1 deleted", left)
	}
}

func TestPreemptionExplainsWhyNoNodeHelps(t *testing.T) {
	nodes := []*framework.NodeInfo{
		schedtest.NodeInfo(schedtest.MakeNode().Name("tainted").Capacity("cpu", "8").Taint("k", "v", v1.TaintEffectNoSchedule).Obj()),
		schedtest.NodeInfo(schedtest.MakeNode().Name("vips").Capacity("cpu", "1").Obj(), low("v", 5000, "1")),
		schedtest.NodeInfo(schedtest.MakeNode().Name("small").Capacity("cpu", "1").Obj(), low("l", 0, "500m")),
	}
	f, _ := setup(t, nodes...)
	_, s := postFilter(t, f, schedtest.MakePod().Name("big").Priority(1000).Req("cpu", "2").Obj())
	// The scheduler's FitError appends the final period when it adds this to its own message.
	want := "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod"
	if s.Code() != framework.Unschedulable || s.Message() != want {
		t.Fatalf("status = %v\nwant message %q", s, want)
	}
}

func TestPodsThatMayNotPreemptSayWhy(t *testing.T) {
	nodes := []*framework.NodeInfo{schedtest.NodeInfo(schedtest.MakeNode().Name("n").Capacity("cpu", "1").Obj(), low("l", 0, "1"))}
	f, _ := setup(t, nodes...)
	never := v1.PreemptNever
	pod := schedtest.MakePod().Name("polite").Priority(1000).Req("cpu", "1").Obj()
	pod.Spec.PreemptionPolicy = &never
	if _, s := postFilter(t, f, pod); s.Message() != MsgPolicyNever {
		t.Fatalf("message = %q, want %q", s.Message(), MsgPolicyNever)
	}
}
