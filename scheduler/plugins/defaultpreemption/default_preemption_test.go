package defaultpreemption

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	goruntime "runtime"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/framework/runtime"
	"github.com/skiffkube/skiff/scheduler/metrics"
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
	return setupWithArgs(t, nil, nodes...)
}

// setupWithArgs is setup with this plugin configured by args.
func setupWithArgs(t *testing.T, args any, nodes ...*framework.NodeInfo) (*runtime.Framework, *fake.Clientset) {
	var objs []kruntime.Object
	for _, ni := range nodes {
		for _, p := range ni.Pods {
			objs = append(objs, p.Pod)
		}
	}
	cs := fake.NewClientset(objs...)
	reg := runtime.Registry{Name: New, noderesourcesfit.Name: noderesourcesfit.New, tainttoleration.Name: tainttoleration.New}
	f := schedtest.Framework(t, cs, reg, []runtime.PluginConfig{{Name: tainttoleration.Name}, {Name: noderesourcesfit.Name}, {Name: Name, Args: args}}, nodes...)
	return f, cs
}

// filterAll runs PreFilter and Filter over every node like the scheduler
// would, and returns the cycle's state and each node's rejection. The pod
// goes into the informer's store first, where the scheduler's informer
// would have it: preemption reads its latest version there.
func filterAll(t *testing.T, f *runtime.Framework, pod *v1.Pod) (*framework.CycleState, framework.NodeToStatus) {
	t.Helper()
	if err := f.SharedInformerFactory().Core().V1().Pods().Informer().GetIndexer().Add(pod); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	state := framework.NewCycleState()
	nodes := f.SnapshotLister().List()
	if _, s, _ := f.RunPreFilterPlugins(ctx, state, pod, nodes); !s.IsSuccess() {
		t.Fatalf("PreFilter: %v", s)
	}
	feasible, statuses, _, err := f.FindFeasibleNodes(ctx, state, pod, nodes, 0, 0)
	if err != nil || len(feasible) != 0 {
		t.Fatalf("the pod should fit nowhere before preemption (feasible %d, err %v)", len(feasible), err)
	}
	return state, statuses
}

// postFilter filters every node like the scheduler would, then preempts,
// and waits for the victims' deletion, which goes on after PostFilter.
func postFilter(t *testing.T, f *runtime.Framework, pod *v1.Pod) (*framework.PostFilterResult, *framework.Status) {
	state, statuses := filterAll(t, f, pod)
	res, s := f.RunPostFilterPlugins(context.Background(), state, pod, statuses)
	f.Wait()
	return res, s
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
	res, s := postFilter(t, f, schedtest.MakePod().Name("big").Priority(1000).Req("cpu", "2").Obj())
	// The scheduler's FitError appends the final period when it adds this to its own message.
	// "small" still lacks CPU with its low-priority pod gone: as kube-scheduler
	// does, the message gives that filter's reason, not "no victims".
	want := "preemption: 0/3 nodes are available: 1 Insufficient cpu, 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling"
	if s.Code() != framework.Unschedulable || s.Message() != want {
		t.Fatalf("status = %v\nwant message %q", s, want)
	}
	// As kube-scheduler: a result naming no node clears any nomination the pod had.
	if res == nil || res.NominatedNodeName != "" {
		t.Fatalf("result = %+v, want one clearing the nominated node", res)
	}
}

func TestPodsThatMayNotPreemptSayWhy(t *testing.T) {
	nodes := []*framework.NodeInfo{schedtest.NodeInfo(schedtest.MakeNode().Name("n").Capacity("cpu", "1").Obj(), low("l", 0, "1"))}
	f, _ := setup(t, nodes...)
	never := v1.PreemptNever
	pod := schedtest.MakePod().Name("polite").Priority(1000).Req("cpu", "1").Obj()
	pod.Spec.PreemptionPolicy = &never
	res, s := postFilter(t, f, pod)
	if s.Message() != MsgPolicyNever {
		t.Fatalf("message = %q, want %q", s.Message(), MsgPolicyNever)
	}
	if res != nil {
		t.Fatalf("result = %+v, want none: an ineligible pod keeps its nomination", res)
	}
}

func guarded(name string, prio int32, cpu string) *v1.Pod {
	return schedtest.MakePod().Name(name).Label("app", "guarded").Priority(prio).Req("cpu", cpu).Obj()
}

// noDisruptions is a budget allowing no eviction of app=guarded pods.
func noDisruptions() *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guard", Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0},
	}
}

func TestPreemptionAvoidsViolatingPodDisruptionBudgets(t *testing.T) {
	node := func(name string) *v1.Node { return schedtest.MakeNode().Name(name).Capacity("cpu", "2").Obj() }
	tests := []struct {
		name        string
		nodes       []*framework.NodeInfo
		wantNode    string
		wantDeleted []string
	}{
		{
			// Without the budget n1 would win: its victim is less important.
			name: "a node whose victims violate no budget wins over less important victims",
			nodes: []*framework.NodeInfo{
				schedtest.NodeInfo(node("n1"), guarded("a", 10, "2")),
				schedtest.NodeInfo(node("n2"), low("b", 20, "2")),
			},
			wantNode: "n2", wantDeleted: []string{"b"},
		},
		{
			// Reprieving by importance alone would keep b and evict a.
			name: "on a node, pods guarded by a budget are reprieved first",
			nodes: []*framework.NodeInfo{
				schedtest.NodeInfo(node("n1"), guarded("a", 5, "1"), low("b", 10, "1")),
			},
			wantNode: "n1", wantDeleted: []string{"b"},
		},
		{
			name: "when every node violates a budget, the fewest violations win",
			nodes: []*framework.NodeInfo{
				schedtest.NodeInfo(node("n1"), guarded("a1", 1, "1"), guarded("a2", 1, "1")),
				schedtest.NodeInfo(node("n2"), guarded("b1", 50, "1"), low("b2", 60, "1")),
			},
			wantNode: "n2", wantDeleted: []string{"b1", "b2"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, cs := setup(t, tc.nodes...)
			if err := f.SharedInformerFactory().Policy().V1().PodDisruptionBudgets().Informer().GetIndexer().Add(noDisruptions()); err != nil {
				t.Fatal(err)
			}
			need := "1"
			if len(tc.wantDeleted) == 2 {
				need = "2"
			}
			res, s := postFilter(t, f, schedtest.MakePod().Name("vip").Priority(1000).Req("cpu", need).Obj())
			if !s.IsSuccess() || res == nil || res.NominatedNodeName != tc.wantNode {
				t.Fatalf("result %+v status %v, want %s nominated", res, s, tc.wantNode)
			}
			pods, _ := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
			left := map[string]bool{}
			for _, p := range pods.Items {
				left[p.Name] = true
			}
			for _, ni := range tc.nodes {
				for _, p := range ni.Pods {
					deleted := !left[p.Pod.Name]
					if want := slices.Contains(tc.wantDeleted, p.Pod.Name); deleted != want {
						t.Errorf("%s deleted = %v, want %v", p.Pod.Name, deleted, want)
					}
				}
			}
		})
	}
}

// When the candidates tie on every other count, kube-scheduler preempts on
// the node whose most important victims started latest: the pod that has
// run longest keeps running.
func TestPreemptionSparesThePodRunningLongest(t *testing.T) {
	started := func(p *v1.Pod, ago time.Duration) *v1.Pod {
		st := metav1.NewTime(time.Now().Add(-ago))
		p.Status.StartTime = &st
		return p
	}
	node := func(name string) *v1.Node { return schedtest.MakeNode().Name(name).Capacity("cpu", "1").Obj() }
	for _, order := range [][2]string{{"old", "new"}, {"new", "old"}} {
		nodes := []*framework.NodeInfo{
			schedtest.NodeInfo(node("n-"+order[0]), started(low(order[0], 10, "1"), map[string]time.Duration{"old": time.Hour, "new": time.Minute}[order[0]])),
			schedtest.NodeInfo(node("n-"+order[1]), started(low(order[1], 10, "1"), map[string]time.Duration{"old": time.Hour, "new": time.Minute}[order[1]])),
		}
		f, _ := setup(t, nodes...)
		res, s := postFilter(t, f, schedtest.MakePod().Name("vip").Priority(1000).Req("cpu", "1").Obj())
		if !s.IsSuccess() || res == nil || res.NominatedNodeName != "n-new" {
			t.Fatalf("nodes in order %v: result %+v status %v, want n-new (its victim started a minute ago)", order, res, s)
		}
	}
}

// terminating marks p as being deleted; by preemption when preempted.
func terminating(p *v1.Pod, preempted bool) *v1.Pod {
	p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	if preempted {
		p.Status.Conditions = []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonPreemptionByScheduler}}
	}
	return p
}

// As kube-scheduler's PodEligibleToPreemptOthers: a pod waits for the
// victims of its earlier preemption to go, but only for pods the scheduler
// is preempting, and not on a nominated node Filter rules out for good.
func TestATerminatingVictimHoldsOffAnotherPreemption(t *testing.T) {
	tests := []struct {
		name     string
		nodes    []*framework.NodeInfo
		wantNode string // "" wants MsgTerminating
	}{
		{
			name:  "a victim of preemption terminating on the nominated node",
			nodes: []*framework.NodeInfo{schedtest.NodeInfo(schedtest.MakeNode().Name("n").Capacity("cpu", "1").Obj(), terminating(low("victim", 0, "1"), true))},
		},
		{
			name:     "a pod deleted by its owner terminating there",
			nodes:    []*framework.NodeInfo{schedtest.NodeInfo(schedtest.MakeNode().Name("n").Capacity("cpu", "1").Obj(), terminating(low("deleted", 0, "1"), false))},
			wantNode: "n",
		},
		{
			name: "the nominated node was tainted since",
			nodes: []*framework.NodeInfo{
				schedtest.NodeInfo(schedtest.MakeNode().Name("n").Capacity("cpu", "1").Taint("k", "v", v1.TaintEffectNoSchedule).Obj(), terminating(low("victim", 0, "1"), true)),
				schedtest.NodeInfo(schedtest.MakeNode().Name("other").Capacity("cpu", "1").Obj(), low("l", 0, "1")),
			},
			wantNode: "other",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := setup(t, tc.nodes...)
			pod := schedtest.MakePod().Name("vip").Priority(1000).Req("cpu", "1").Obj()
			pod.Status.NominatedNodeName = "n"
			res, s := postFilter(t, f, pod)
			if tc.wantNode == "" {
				if s.Message() != MsgTerminating || res != nil {
					t.Fatalf("result %+v status %v, want %q and the nomination kept", res, s, MsgTerminating)
				}
				return
			}
			if !s.IsSuccess() || res == nil || res.NominatedNodeName != tc.wantNode {
				t.Fatalf("result %+v status %v, want %s nominated", res, s, tc.wantNode)
			}
		})
	}
}

// As kube-scheduler v1.33: a victim already terminating (deleted by its
// owner) is marked and deleted like any other, the API call made again;
// skipping it came with v1.35 (kubernetes#134927; v1.34.0 had it briefly,
// then reverted it, kubernetes#134245).
func TestATerminatingVictimIsDeletedAgainAsV133(t *testing.T) {
	node := schedtest.MakeNode().Name("n").Capacity("cpu", "1").Obj()
	f, cs := setup(t, schedtest.NodeInfo(node, terminating(low("going", 0, "1"), false)))
	res, s := postFilter(t, f, schedtest.MakePod().Name("vip").Priority(1000).Req("cpu", "1").Obj())
	if !s.IsSuccess() || res == nil || res.NominatedNodeName != "n" {
		t.Fatalf("result %+v status %v, want n nominated", res, s)
	}
	var deletes, applies int
	for _, a := range cs.Actions() {
		switch {
		case a.GetVerb() == "delete" && a.GetResource().Resource == "pods":
			deletes++
		case a.GetVerb() == "patch" && a.GetSubresource() == "status":
			applies++
		}
	}
	if deletes != 1 || applies != 1 {
		t.Errorf("%d deletions and %d status writes of the terminating victim, want one of each", deletes, applies)
	}
	if n, sum := victimsObserved(t, f); n != 1 || sum != 1 {
		t.Errorf("observed %d preemptions with %v victims, want 1 with 1", n, sum)
	}
}

// candidateNodes names the nodes of cs, in order.
func candidateNodes(cs []Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Node)
	}
	return out
}

// startingAt makes the dry run of f's plugin start at the potential node of
// index offset, as the random offset of kube-scheduler's would.
func startingAt(t *testing.T, f *runtime.Framework, offset int) *DefaultPreemption {
	t.Helper()
	pl, ok := f.Plugin(Name).(*DefaultPreemption)
	if !ok {
		t.Fatalf("plugin %s is %T", Name, f.Plugin(Name))
	}
	pl.offset = func(n int) int { return offset % n }
	return pl
}

// As kube-scheduler's DryRunPreemption: the dry run starts at an offset and
// stops once it has the candidates minCandidateNodesAbsolute and
// minCandidateNodesPercentage ask for, so the node chosen is the best of
// those, not of the whole cluster.
func TestPreemptionDryRunStopsOnceItHasEnoughCandidates(t *testing.T) {
	// n0's victim is the least important: without the bound it always wins.
	var nodes []*framework.NodeInfo
	for i := range 5 {
		name := fmt.Sprintf("n%d", i)
		nodes = append(nodes, schedtest.NodeInfo(schedtest.MakeNode().Name(name).Capacity("cpu", "1").Obj(), low("on-"+name, int32(i+1), "1")))
	}
	two := Args{MinCandidateNodesPercentage: ptr.To[int32](0), MinCandidateNodesAbsolute: ptr.To[int32](2)}
	tests := []struct {
		name           string
		args           any
		offset         int
		wantCandidates []string
		wantNode       string
	}{
		{name: "two candidates from the fourth node", args: two, offset: 3, wantCandidates: []string{"n3", "n4"}, wantNode: "n3"},
		{name: "two candidates, wrapping round", args: two, offset: 4, wantCandidates: []string{"n4", "n0"}, wantNode: "n0"},
		{name: "40% of five nodes", args: Args{MinCandidateNodesPercentage: ptr.To[int32](40), MinCandidateNodesAbsolute: ptr.To[int32](0)},
			offset: 1, wantCandidates: []string{"n1", "n2"}, wantNode: "n1"},
		{name: "the defaults take every node of a small cluster", offset: 2, wantCandidates: []string{"n2", "n3", "n4", "n0", "n1"}, wantNode: "n0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := setupWithArgs(t, tc.args, nodes...)
			pl := startingAt(t, f, tc.offset)
			pod := schedtest.MakePod().Name("vip").Priority(1000).Req("cpu", "1").Obj()
			state, statuses := filterAll(t, f, pod)
			cs, _, err := pl.FindCandidates(context.Background(), state, pod, statuses)
			if err != nil {
				t.Fatal(err)
			}
			if got := candidateNodes(cs); !slices.Equal(got, tc.wantCandidates) {
				t.Errorf("candidates %v, want %v", got, tc.wantCandidates)
			}
			res, s := f.RunPostFilterPlugins(context.Background(), state, pod, statuses)
			if !s.IsSuccess() || res == nil || res.NominatedNodeName != tc.wantNode {
				t.Fatalf("result %+v status %v, want %s nominated", res, s, tc.wantNode)
			}
		})
	}
}

// TestParallelDryRunFindsTheCandidatesOfANodeByNodeWalk: the dry run
// simulates nodes on several goroutines, as kube-scheduler's, but counts
// each round of them in visiting order, so it finds what a walk node by node
// from the offset finds, in that order (SelectCandidate breaks ties by it),
// however the goroutines run: where every node would do, the 100 the
// defaults ask for; where few do, every one of them, and why each other node
// is none. Meant for -race.
func TestParallelDryRunFindsTheCandidatesOfANodeByNodeWalk(t *testing.T) {
	// More goroutines than a small machine has cores, so that outcomes
	// arrive out of order.
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(4))
	const n, offset, want = 300, 250, 100
	tests := []struct {
		name      string
		qualifies func(i int) bool
	}{
		{name: "every node would do", qualifies: func(int) bool { return true }},
		{name: "few nodes would do", qualifies: func(i int) bool { return i%37 == 5 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var nodes []*framework.NodeInfo
			qualifying := map[string]bool{}
			for i := range n {
				name := fmt.Sprintf("n%03d", i)
				prio := int32(5000) // more important than the preemptor: no victim here
				if tc.qualifies(i) {
					prio, qualifying[name] = int32(i%7), true
				}
				nodes = append(nodes, schedtest.NodeInfo(schedtest.MakeNode().Name(name).Capacity("cpu", "1").Obj(), low("on-"+name, prio, "1")))
			}
			f, _ := setup(t, nodes...)
			pl := startingAt(t, f, offset)
			pod := schedtest.MakePod().Name("vip").Priority(1000).Req("cpu", "1").Obj()
			state, statuses := filterAll(t, f, pod)

			var walk, passed []string
			all := f.SnapshotLister().List()
			for i := range all {
				name := all[(offset+i)%len(all)].NodeName()
				if !qualifying[name] {
					passed = append(passed, name)
					continue
				}
				if walk = append(walk, name); len(walk) == want {
					break
				}
			}
			for range 10 {
				cs, why, err := pl.FindCandidates(context.Background(), state, pod, statuses)
				if err != nil {
					t.Fatal(err)
				}
				if got := candidateNodes(cs); !slices.Equal(got, walk) {
					t.Fatalf("candidates %v,\nwant %v", got, walk)
				}
				for _, name := range passed {
					if s := why[name]; s.Code() != framework.UnschedulableAndUnresolvable || s.Message() != ReasonNoVictims {
						t.Fatalf("%s: %v, want %q", name, s, ReasonNoVictims)
					}
				}
			}
		})
	}
}

// As kube-scheduler: candidates whose victims violate a PodDisruptionBudget
// do not end the dry run, which goes on until one violates none; each kind
// is kept up to the number asked for.
func TestPreemptionDryRunGoesOnUntilACandidateViolatesNoBudget(t *testing.T) {
	node := func(name string) *v1.Node { return schedtest.MakeNode().Name(name).Capacity("cpu", "1").Obj() }
	nodes := []*framework.NodeInfo{
		schedtest.NodeInfo(node("n0"), guarded("g0", 1, "1")),
		schedtest.NodeInfo(node("n1"), guarded("g1", 1, "1")),
		schedtest.NodeInfo(node("n2"), low("l2", 10, "1")),
		schedtest.NodeInfo(node("n3"), low("l3", 1, "1")),
	}
	one := Args{MinCandidateNodesPercentage: ptr.To[int32](0), MinCandidateNodesAbsolute: ptr.To[int32](1)}
	f, _ := setupWithArgs(t, one, nodes...)
	if err := f.SharedInformerFactory().Policy().V1().PodDisruptionBudgets().Informer().GetIndexer().Add(noDisruptions()); err != nil {
		t.Fatal(err)
	}
	pl := startingAt(t, f, 0)
	pod := schedtest.MakePod().Name("vip").Priority(1000).Req("cpu", "1").Obj()
	state, statuses := filterAll(t, f, pod)
	cs, _, err := pl.FindCandidates(context.Background(), state, pod, statuses)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := candidateNodes(cs), []string{"n2", "n0"}; !slices.Equal(got, want) {
		t.Errorf("candidates %v, want %v (n2 violates no budget, then the first violating one)", got, want)
	}
	res, s := f.RunPostFilterPlugins(context.Background(), state, pod, statuses)
	if !s.IsSuccess() || res == nil || res.NominatedNodeName != "n2" {
		t.Fatalf("result %+v status %v, want n2 nominated", res, s)
	}
}

// As kube-scheduler: only nodes Filter found Unschedulable are simulated;
// one it never judged is no more a candidate than one it ruled out.
func TestPreemptionLeavesNodesFilterDidNotRejectAlone(t *testing.T) {
	node := func(name string) *v1.Node { return schedtest.MakeNode().Name(name).Capacity("cpu", "1").Obj() }
	nodes := []*framework.NodeInfo{
		schedtest.NodeInfo(node("n0"), low("l0", 1, "1")),
		schedtest.NodeInfo(node("n1"), low("l1", 2, "1")),
	}
	f, _ := setup(t, nodes...)
	pod := schedtest.MakePod().Name("vip").Priority(1000).Req("cpu", "1").Obj()
	state, statuses := filterAll(t, f, pod)
	delete(statuses, "n0")
	pl := f.Plugin(Name).(*DefaultPreemption)
	cs, why, err := pl.FindCandidates(context.Background(), state, pod, statuses)
	if err != nil {
		t.Fatal(err)
	}
	if got := candidateNodes(cs); !slices.Equal(got, []string{"n1"}) {
		t.Errorf("candidates %v, want [n1]", got)
	}
	if s := why["n0"]; s.Code() != framework.UnschedulableAndUnresolvable || s.Message() != ReasonNotHelpful {
		t.Errorf("n0: %v, want %q", s, ReasonNotHelpful)
	}
}

// Bad DefaultPreemptionArgs fail the plugin's construction, naming the field.
func TestNewRefusesBadArgs(t *testing.T) {
	h := schedtest.Framework(t, fake.NewClientset(), runtime.Registry{}, nil)
	_, err := New(&Args{MinCandidateNodesAbsolute: ptr.To[int32](-3)}, h)
	want := "DefaultPreemption: minCandidateNodesAbsolute: Invalid value: -3: not in valid range [0, inf)"
	if err == nil || err.Error() != want {
		t.Fatalf("New: %v, want %q", err, want)
	}
	if _, err := New(struct{}{}, h); err == nil {
		t.Fatal("New with args of another type succeeded")
	}
}

// erringOnEmpty is a Filter plugin that errs on the node named bad once it
// holds no pod: only preemption's simulation, which removes them, sees it err.
type erringOnEmpty struct{ bad string }

func (erringOnEmpty) Name() string { return "ErringOnEmpty" }
func (p erringOnEmpty) Filter(_ context.Context, _ *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	if ni.NodeName() == p.bad && len(ni.Pods) == 0 {
		return framework.AsStatus(errors.New("lost its marbles"))
	}
	return nil
}

// As kube-scheduler: a simulation that errs on one node leaves the node out
// of the candidates; the error is preemption's answer only when no other
// node is one.
func TestPreemptionGoesOnPastANodeWhoseSimulationErrs(t *testing.T) {
	node := func(name string) *v1.Node { return schedtest.MakeNode().Name(name).Capacity("cpu", "1").Obj() }
	tests := []struct {
		name      string
		nodes     []*framework.NodeInfo
		wantNode  string
		wantError string
	}{
		{
			name:     "another node is a candidate",
			nodes:    []*framework.NodeInfo{schedtest.NodeInfo(node("bad"), low("b", 1, "1")), schedtest.NodeInfo(node("good"), low("g", 5, "1"))},
			wantNode: "good",
		},
		{
			name:      "no other node is one",
			nodes:     []*framework.NodeInfo{schedtest.NodeInfo(node("bad"), low("b", 1, "1")), schedtest.NodeInfo(node("vips"), low("v", 5000, "1"))},
			wantError: `preemption: running "ErringOnEmpty" filter plugin: lost its marbles`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := runtime.Registry{Name: New, noderesourcesfit.Name: noderesourcesfit.New,
				"ErringOnEmpty": func(any, framework.Handle) (framework.Plugin, error) { return erringOnEmpty{bad: "bad"}, nil }}
			f := schedtest.Framework(t, fake.NewClientset(), reg, []runtime.PluginConfig{{Name: noderesourcesfit.Name}, {Name: "ErringOnEmpty"}, {Name: Name}}, tc.nodes...)
			startingAt(t, f, 0)
			res, s := postFilter(t, f, schedtest.MakePod().Name("vip").Priority(1000).Req("cpu", "1").Obj())
			if tc.wantError != "" {
				if s.Code() != framework.Error || s.Message() != tc.wantError || res != nil {
					t.Fatalf("result %+v status %v, want error %q", res, s, tc.wantError)
				}
				return
			}
			if !s.IsSuccess() || res == nil || res.NominatedNodeName != tc.wantNode {
				t.Fatalf("result %+v status %v, want %s nominated", res, s, tc.wantNode)
			}
		})
	}
}

// victimsObserved reads scheduler_preemption_victims off the framework's
// metrics: how many preemptions it counted and their victims in all.
func victimsObserved(t *testing.T, f *runtime.Framework) (preemptions uint64, victims float64) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(f.Metrics().Collectors()...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		if fam.GetName() == "scheduler_preemption_victims" {
			h := fam.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatal("scheduler_preemption_victims is not exported")
	return 0, 0
}

// As kube-scheduler's scheduler_preemption_victims with asynchronous
// preemption: each preemption that chose its victims observes how many,
// when it chooses them, even if evicting them then fails; one that found no
// candidate observes nothing.
func TestPreemptionCountsItsVictims(t *testing.T) {
	node := schedtest.MakeNode().Name("n").Capacity("cpu", "2").Obj()
	vip := func() *v1.Pod { return schedtest.MakePod().Name("vip").Priority(1000).Req("cpu", "2").Obj() }

	t.Run("evicted", func(t *testing.T) {
		f, _ := setup(t, schedtest.NodeInfo(node, low("a", 1, "1"), low("b", 2, "1")))
		if res, s := postFilter(t, f, vip()); !s.IsSuccess() || res == nil || res.NominatedNodeName != "n" {
			t.Fatalf("result %+v status %v, want n nominated", res, s)
		}
		if n, sum := victimsObserved(t, f); n != 1 || sum != 2 {
			t.Errorf("observed %d preemptions with %v victims, want 1 with 2", n, sum)
		}
	})

	t.Run("eviction refused", func(t *testing.T) {
		f, cs := setup(t, schedtest.NodeInfo(node, low("a", 1, "1"), low("b", 2, "1")))
		cs.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, kruntime.Object, error) {
			return true, nil, errors.New("refused")
		})
		if res, s := postFilter(t, f, vip()); !s.IsSuccess() || res == nil || res.NominatedNodeName != "n" {
			t.Fatalf("result %+v status %v, want n nominated (the victims are deleted later)", res, s)
		}
		if n, sum := victimsObserved(t, f); n != 1 || sum != 2 {
			t.Errorf("observed %d preemptions with %v victims, want 1 with 2", n, sum)
		}
	})

	t.Run("no candidate", func(t *testing.T) {
		f, _ := setup(t, schedtest.NodeInfo(node, low("a", 5000, "2")))
		if _, s := postFilter(t, f, vip()); s.Code() != framework.Unschedulable {
			t.Fatalf("status %v, want unschedulable", s)
		}
		if n, _ := victimsObserved(t, f); n != 0 {
			t.Errorf("observed %d preemptions, want none", n)
		}
	})
}

// goroutinesObserved reads the preemption goroutine metrics off the
// framework's: by result, how many goroutines the counter and the duration
// histogram saw.
func goroutinesObserved(t *testing.T, f *runtime.Framework) (counted, timed map[string]uint64) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(f.Metrics().Collectors()...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counted, timed = map[string]uint64{}, map[string]uint64{}
	for _, fam := range families {
		for _, m := range fam.GetMetric() {
			switch fam.GetName() {
			case "scheduler_preemption_goroutines_execution_total":
				counted[m.GetLabel()[0].GetValue()] = uint64(m.GetCounter().GetValue())
			case "scheduler_preemption_goroutines_duration_seconds":
				timed[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	return counted, timed
}

// As kube-scheduler v1.33 with SchedulerAsyncPreemption: each goroutine that
// deletes a preemption's victims is counted and timed once it is over, by
// result: success once its victims are deleted, error when a deletion was
// refused. A preemption that found no candidate starts no goroutine.
func TestPreemptionGoroutinesAreCountedByResult(t *testing.T) {
	node := schedtest.MakeNode().Name("n").Capacity("cpu", "2").Obj()
	vip := func() *v1.Pod { return schedtest.MakePod().Name("vip").Priority(1000).Req("cpu", "2").Obj() }
	tests := []struct {
		name   string
		refuse bool
		pods   []*v1.Pod
		want   map[string]uint64
	}{
		{name: "victims deleted", pods: []*v1.Pod{low("a", 1, "1"), low("b", 2, "1")}, want: map[string]uint64{metrics.GoroutineSuccess: 1}},
		{name: "deletion refused", refuse: true, pods: []*v1.Pod{low("a", 1, "1"), low("b", 2, "1")}, want: map[string]uint64{metrics.GoroutineError: 1}},
		{name: "no candidate", pods: []*v1.Pod{low("a", 5000, "2")}, want: map[string]uint64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, cs := setup(t, schedtest.NodeInfo(node, tc.pods...))
			if tc.refuse {
				cs.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, kruntime.Object, error) {
					return true, nil, errors.New("refused")
				})
			}
			postFilter(t, f, vip())
			counted, timed := goroutinesObserved(t, f)
			if !maps.Equal(counted, tc.want) || !maps.Equal(timed, tc.want) {
				t.Errorf("goroutines counted %v and timed %v, want %v", counted, timed, tc.want)
			}
		})
	}
}

// The sum of the victims' priorities compares each shifted by 2^31, as
// kube-scheduler's pickOneNodeForPreemption does, so that it is never
// negative: with the lowest priority there is, one more victim adds nothing
// to the sum, and a candidate whose sum is smaller by one wins even with more
// victims (skiff shifted by 2^31+1, which counted victims into the sum).
func TestSelectCandidateSumsPrioritiesAsKubeScheduler(t *testing.T) {
	prio := func(name string, p int32) *v1.Pod { return schedtest.MakePod().Name(name).Priority(p).Obj() }
	fewer := Candidate{Node: "fewer", Victims: []*v1.Pod{prio("a", 0), prio("b", 0)}}
	smaller := Candidate{Node: "smaller", Victims: []*v1.Pod{prio("c", 0), prio("d", math.MinInt32), prio("e", -1)}}
	for _, cs := range [][]Candidate{{fewer, smaller}, {smaller, fewer}} {
		if got := SelectCandidate(cs).Node; got != "smaller" {
			t.Errorf("SelectCandidate picked %s, want the smaller sum of priorities", got)
		}
	}
}

// As kube-scheduler's DryRunPreemption: a node Filter found Unschedulable
// where the pod turns out to fit without evicting anyone (Filter saw an
// older state, say) is an error of its simulation, "expected at least one
// victim pod", not a rejection. As any simulation error, it is preemption's
// answer (an Error, which keeps the pod's nomination) only when no node is a
// candidate, and the errors of several nodes are listed together.
func TestANodeWhereThePodFitsWithoutVictimsIsAnError(t *testing.T) {
	roomy := func(name string) *framework.NodeInfo {
		return schedtest.NodeInfo(schedtest.MakeNode().Name(name).Capacity("cpu", "2").Obj(), low("on-"+name, 1, "1"))
	}
	full := schedtest.NodeInfo(schedtest.MakeNode().Name("full").Capacity("cpu", "1").Obj(), low("on-full", 5, "1"))
	tests := []struct {
		name      string
		nodes     []*framework.NodeInfo
		wantNode  string
		wantError string
	}{
		{
			name:      "the only node Filter rejected",
			nodes:     []*framework.NodeInfo{roomy("roomy")},
			wantError: `preemption: expected at least one victim pod on node "roomy"`,
		},
		{
			name:      "two such nodes",
			nodes:     []*framework.NodeInfo{roomy("r0"), roomy("r1")},
			wantError: `preemption: [expected at least one victim pod on node "r0", expected at least one victim pod on node "r1"]`,
		},
		{
			name:     "another node is a candidate",
			nodes:    []*framework.NodeInfo{roomy("roomy"), full},
			wantNode: "full",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, cs := setup(t, tc.nodes...)
			startingAt(t, f, 0)
			pod := schedtest.MakePod().Name("vip").Priority(1000).Req("cpu", "1").Obj()
			if err := f.SharedInformerFactory().Core().V1().Pods().Informer().GetIndexer().Add(pod); err != nil {
				t.Fatal(err)
			}
			state := framework.NewCycleState()
			if _, s, _ := f.RunPreFilterPlugins(context.Background(), state, pod, f.SnapshotLister().List()); !s.IsSuccess() {
				t.Fatalf("PreFilter: %v", s)
			}
			// Filter's verdict as it would be from an older view of the nodes.
			statuses := framework.NodeToStatus{}
			for _, ni := range tc.nodes {
				statuses[ni.NodeName()] = framework.NewStatus(framework.Unschedulable, "Insufficient cpu")
			}
			res, s := f.RunPostFilterPlugins(context.Background(), state, pod, statuses)
			if tc.wantError != "" {
				if s.Code() != framework.Error || s.Message() != tc.wantError || res != nil {
					t.Fatalf("result %+v status %v, want error %q", res, s, tc.wantError)
				}
				pods, _ := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
				if len(pods.Items) != len(tc.nodes) {
					t.Fatalf("%d pods left, want all %d: nothing is evicted", len(pods.Items), len(tc.nodes))
				}
				return
			}
			if !s.IsSuccess() || res == nil || res.NominatedNodeName != tc.wantNode {
				t.Fatalf("result %+v status %v, want %s nominated", res, s, tc.wantNode)
			}
		})
	}
}
