package scheduler_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiffkube/skiff/scheduler"
	"github.com/skiffkube/skiff/scheduler/configfile"
	"github.com/skiffkube/skiff/scheduler/framework/runtime"
	"github.com/skiffkube/skiff/scheduler/metrics"
	"github.com/skiffkube/skiff/scheduler/plugins"
	"github.com/skiffkube/skiff/scheduler/plugins/queuesort"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

func getPod(t testing.TB, cs *fake.Clientset, name string) *v1.Pod {
	t.Helper()
	p, err := cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod %s: %v", name, err)
	}
	return p
}

func createPod(t testing.TB, cs *fake.Clientset, p *v1.Pod) {
	t.Helper()
	if _, err := cs.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", p.Name, err)
	}
}

func scheduledCondition(p *v1.Pod) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func waitBound(t testing.TB, cs *fake.Clientset, name string) string {
	t.Helper()
	var node string
	waitFor(t, "pod "+name+" bound", func() (bool, error) {
		node = getPod(t, cs, name).Spec.NodeName
		return node != "", nil
	})
	return node
}

func waitUnschedulable(t testing.TB, cs *fake.Clientset, name string) *v1.PodCondition {
	t.Helper()
	var cond *v1.PodCondition
	waitFor(t, "pod "+name+" PodScheduled=False", func() (bool, error) {
		cond = scheduledCondition(getPod(t, cs, name))
		return cond != nil && cond.Status == v1.ConditionFalse, nil
	})
	return cond
}

func events(t testing.TB, cs *fake.Clientset, reason string) []string {
	t.Helper()
	list, err := cs.EventsV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

func threeNodes() []*v1.Node {
	return []*v1.Node{
		schedtest.MakeNode().Name("n1").Capacity("cpu", "2", "memory", "4Gi").Obj(),
		schedtest.MakeNode().Name("n2").Capacity("cpu", "2", "memory", "4Gi").Obj(),
		schedtest.MakeNode().Name("n3").Capacity("cpu", "8", "memory", "16Gi").Taint(v1.TaintNodeUnreachable, "", v1.TaintEffectNoExecute).Obj(),
	}
}

func TestPodsAreBoundThroughTheBindingSubresourceAndNeverOvercommit(t *testing.T) {
	cs := newFakeClientset()
	for _, n := range threeNodes() {
		if _, err := cs.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	startScheduler(t, cs, scheduler.Config{})
	// Eight half-CPU pods fill n1 and n2 exactly; the tainted n3 must stay empty.
	for i := 0; i < 8; i++ {
		createPod(t, cs, schedtest.MakePod().Name(fmt.Sprintf("p%d", i)).Req("cpu", "500m").Obj())
	}
	perNode := map[string]int{}
	for i := 0; i < 8; i++ {
		name := fmt.Sprintf("p%d", i)
		node := waitBound(t, cs, name)
		perNode[node]++
		if c := scheduledCondition(getPod(t, cs, name)); c == nil || c.Status != v1.ConditionTrue {
			t.Errorf("%s: PodScheduled = %+v, want True", name, c)
		}
	}
	if perNode["n1"] != 4 || perNode["n2"] != 4 || perNode["n3"] != 0 {
		t.Fatalf("pods per node = %v, want n1:4 n2:4", perNode)
	}
	waitFor(t, "Scheduled events", func() (bool, error) { return len(events(t, cs, "Scheduled")) == 8, nil })
	for _, m := range events(t, cs, "Scheduled") {
		if !strings.HasPrefix(m, "Successfully assigned default/p") || !(strings.HasSuffix(m, " to n1") || strings.HasSuffix(m, " to n2")) {
			t.Errorf("Scheduled event message %q", m)
		}
	}

	// The ninth does not fit anywhere: the message says why, node by node.
	createPod(t, cs, schedtest.MakePod().Name("big").Req("cpu", "500m").Obj())
	cond := waitUnschedulable(t, cs, "big")
	want := "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, 2 Insufficient cpu. " +
		"preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
	if cond.Reason != v1.PodReasonUnschedulable || cond.Message != want {
		t.Fatalf("condition = %s %q\nwant        Unschedulable %q", cond.Reason, cond.Message, want)
	}
	waitFor(t, "FailedScheduling event", func() (bool, error) {
		for _, m := range events(t, cs, "FailedScheduling") {
			if m == want {
				return true, nil
			}
		}
		return false, nil
	})

	// Deleting a bound pod frees room; the waiting pod takes it.
	freed := getPod(t, cs, "p0").Spec.NodeName
	if err := cs.CoreV1().Pods("default").Delete(context.Background(), "p0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := waitBound(t, cs, "big"); got != freed {
		t.Fatalf("big bound to %s, want the freed node %s", got, freed)
	}
}

func TestUnschedulablePodIsRetriedWhenANodeArrives(t *testing.T) {
	cs := newFakeClientset()
	startScheduler(t, cs, scheduler.Config{})
	createPod(t, cs, schedtest.MakePod().Name("waiting").Req("cpu", "1").Obj())
	cond := waitUnschedulable(t, cs, "waiting")
	if cond.Message != "no nodes available to schedule pods" {
		t.Fatalf("message = %q", cond.Message)
	}
	node := schedtest.MakeNode().Name("late").Capacity("cpu", "2").Obj()
	if _, err := cs.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := waitBound(t, cs, "waiting"); got != "late" {
		t.Fatalf("bound to %q", got)
	}
}

func TestHighPriorityPodPreemptsLowerPriorityPods(t *testing.T) {
	cs := newFakeClientset(schedtest.MakeNode().Name("only").Capacity("cpu", "2").Obj())
	startScheduler(t, cs, scheduler.Config{})
	for i := 0; i < 2; i++ {
		createPod(t, cs, schedtest.MakePod().Name(fmt.Sprintf("low%d", i)).Priority(int32(i)).Req("cpu", "1").Obj())
		waitBound(t, cs, fmt.Sprintf("low%d", i))
	}
	createPod(t, cs, schedtest.MakePod().Name("high").Priority(1000).Req("cpu", "1").Obj())
	if got := waitBound(t, cs, "high"); got != "only" {
		t.Fatalf("high bound to %q", got)
	}
	// Only the cheapest victim went: low0 (priority 0) is deleted, low1 stays.
	if _, err := cs.CoreV1().Pods("default").Get(context.Background(), "low0", metav1.GetOptions{}); err == nil {
		t.Errorf("low0 still exists; it should have been preempted")
	}
	if getPod(t, cs, "low1").Spec.NodeName != "only" {
		t.Errorf("low1 should have been kept")
	}
	// The nomination stays on the bound preemptor, as kube-scheduler's
	// does; when the binding came before its status write, the binding
	// writes it.
	waitFor(t, "high's nominatedNodeName", func() (bool, error) {
		return getPod(t, cs, "high").Status.NominatedNodeName == "only", nil
	})
}

func TestPodsForOtherSchedulersAreLeftAlone(t *testing.T) {
	cs := newFakeClientset(schedtest.MakeNode().Name("n").Capacity("cpu", "2").Obj())
	startScheduler(t, cs, scheduler.Config{})
	other := schedtest.MakePod().Name("other").Obj()
	other.Spec.SchedulerName = "someone-else"
	createPod(t, cs, other)
	createPod(t, cs, schedtest.MakePod().Name("mine").Obj())
	waitBound(t, cs, "mine")
	if n := getPod(t, cs, "other").Spec.NodeName; n != "" {
		t.Fatalf("pod for another scheduler bound to %q", n)
	}
}

func TestConfigRejectsUnknownScoringStrategy(t *testing.T) {
	cs := newFakeClientset()
	_, err := scheduler.New(cs, nil, scheduler.Config{})
	if err == nil {
		t.Fatal("New without informer factory should fail")
	}
	_, err = scheduler.New(cs, informersFor(cs), scheduler.Config{ScoringStrategy: "Random"})
	if err == nil || !strings.Contains(err.Error(), "LeastAllocated") {
		t.Fatalf("err = %v, want one naming the valid strategies", err)
	}
	// RequestedToCapacityRatio needs the shape only a profile's args give.
	_, err = scheduler.New(cs, informersFor(cs), scheduler.Config{ScoringStrategy: scheduler.ScoringRequestedToCapacityRatio})
	if err == nil || !strings.Contains(err.Error(), "needs a shape") {
		t.Fatalf("err = %v, want one asking for a shape", err)
	}
}

// A profile needs a queue sort plugin, as kube-scheduler's; the default
// profile has PrioritySort.
func TestProfileNeedsAQueueSortPlugin(t *testing.T) {
	cs := newFakeClientset()
	profile := plugins.DefaultProfile("")
	if !slices.ContainsFunc(profile, func(c runtime.PluginConfig) bool { return c.Name == queuesort.Name }) {
		t.Fatalf("the default profile %v has no %s", profile, queuesort.Name)
	}
	if _, err := scheduler.New(cs, informersFor(cs), scheduler.Config{Plugins: profile}); err != nil {
		t.Fatal(err)
	}
	without := slices.DeleteFunc(slices.Clone(profile), func(c runtime.PluginConfig) bool { return c.Name == queuesort.Name })
	_, err := scheduler.New(cs, informersFor(cs), scheduler.Config{Plugins: without})
	if err == nil || !strings.Contains(err.Error(), "no queue sort plugin is enabled") {
		t.Fatalf("err = %v, want one saying no queue sort plugin is enabled", err)
	}
}

// A pod pinned to one node by name (as a DaemonSet's) is filtered on that
// node only; the message counts the others as kube-scheduler does, and
// preemption leaves them alone.
func TestPodPinnedByNodeNameCountsTheOtherNodesAsNotSatisfyingNodeAffinity(t *testing.T) {
	cs := newFakeClientset()
	for _, n := range []string{"n1", "n2", "n3"} {
		if _, err := cs.CoreV1().Nodes().Create(context.Background(), schedtest.MakeNode().Name(n).Capacity("cpu", "1").Obj(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	startScheduler(t, cs, scheduler.Config{})
	pinned := func(name, node, cpu string) *v1.Pod {
		p := schedtest.MakePod().Name(name).Req("cpu", cpu).Obj()
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}},
		}}}
		return p
	}
	createPod(t, cs, pinned("fits", "n2", "500m"))
	if got := waitBound(t, cs, "fits"); got != "n2" {
		t.Fatalf("fits bound to %s, want n2", got)
	}

	createPod(t, cs, pinned("big", "n1", "2"))
	cond := waitUnschedulable(t, cs, "big")
	want := "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]. " +
		"preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."
	if cond.Message != want {
		t.Fatalf("message %q\nwant    %q", cond.Message, want)
	}

	createPod(t, cs, pinned("nowhere", "gone", "100m"))
	cond = waitUnschedulable(t, cs, "nowhere")
	want = "0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [NodeAffinity]. " +
		"preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
	if cond.Message != want {
		t.Fatalf("message %q\nwant    %q", cond.Message, want)
	}
}

// A profile's NodeAffinityArgs addedAffinity keeps every pod it schedules
// on the nodes it selects; the others count as kube-scheduler counts them,
// and a node relabelled into it retries the pods it kept out.
func TestProfileAddedAffinityKeepsPodsOnItsNodes(t *testing.T) {
	cfg, err := configfile.Parse([]byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [batch]}]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	cs := newFakeClientset()
	createNode(t, cs, schedtest.MakeNode().Name("n1").Label("pool", "batch").Capacity("cpu", "1").Obj())
	for _, n := range []string{"n2", "n3"} {
		createNode(t, cs, schedtest.MakeNode().Name(n).Label("pool", "web").Capacity("cpu", "4").Obj())
	}
	startScheduler(t, cs, cfg)
	// The least allocated nodes, n2 and n3, are not the profile's.
	createPod(t, cs, schedtest.MakePod().Name("first").Req("cpu", "500m").Obj())
	if got := waitBound(t, cs, "first"); got != "n1" {
		t.Fatalf("first bound to %s, want n1", got)
	}

	createPod(t, cs, schedtest.MakePod().Name("second").Req("cpu", "800m").Obj())
	cond := waitUnschedulable(t, cs, "second")
	want := "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match scheduler-enforced node affinity. " +
		"preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."
	if cond.Message != want {
		t.Fatalf("message %q\nwant    %q", cond.Message, want)
	}

	n3, err := cs.CoreV1().Nodes().Get(context.Background(), "n3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n3.Labels["pool"] = "batch"
	if _, err := cs.CoreV1().Nodes().Update(context.Background(), n3, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := waitBound(t, cs, "second"); got != "n3" {
		t.Fatalf("second bound to %s, want n3", got)
	}
}

func createNode(t testing.TB, cs *fake.Clientset, n *v1.Node) {
	t.Helper()
	if _, err := cs.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node %s: %v", n.Name, err)
	}
}

// TestRejectedPodIsRetriedOnlyForEventsItsRejectorsSayMayHelp: with
// kube-scheduler's queueing hints, a pod NodeResourcesFit rejected is not
// retried for a node too small to hold it, and is for a node big enough or
// for a placed pod deleted; a pod a taint kept off its node is retried once
// the taint goes. A retry shows in the pod's PodScheduled message, which
// counts the nodes seen.
func TestRejectedPodIsRetriedOnlyForEventsItsRejectorsSayMayHelp(t *testing.T) {
	cs := newFakeClientset()
	createNode(t, cs, schedtest.MakeNode().Name("small").Capacity("cpu", "1").Obj())
	startScheduler(t, cs, scheduler.Config{})
	createPod(t, cs, schedtest.MakePod().Name("hungry").Req("cpu", "2").Obj())
	if cond := waitUnschedulable(t, cs, "hungry"); !strings.HasPrefix(cond.Message, "0/1 nodes are available: 1 Insufficient cpu.") {
		t.Fatalf("first attempt: %q", cond.Message)
	}

	// A second small node: once a pod pinned to it is bound, the scheduler
	// has seen it; the hungry pod must not have been tried against it.
	createNode(t, cs, schedtest.MakeNode().Name("small2").Capacity("cpu", "1").Obj())
	createPod(t, cs, schedtest.MakePod().Name("probe").NodeSelector(v1.LabelHostname, "small2").Obj())
	waitBound(t, cs, "probe")
	time.Sleep(300 * time.Millisecond) // many backoffs (10ms to 50ms)
	if cond := scheduledCondition(getPod(t, cs, "hungry")); !strings.HasPrefix(cond.Message, "0/1 nodes") {
		t.Fatalf("a node too small for the pod retried it: %q", cond.Message)
	}

	createNode(t, cs, schedtest.MakeNode().Name("big").Capacity("cpu", "2").Obj())
	if got := waitBound(t, cs, "hungry"); got != "big" {
		t.Fatalf("hungry bound to %s, want big", got)
	}

	// Rejected for CPU again, then room freed by a deletion.
	createPod(t, cs, schedtest.MakePod().Name("hungry2").Req("cpu", "2").Obj())
	waitUnschedulable(t, cs, "hungry2")
	if err := cs.CoreV1().Pods("default").Delete(context.Background(), "hungry", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := waitBound(t, cs, "hungry2"); got != "big" {
		t.Fatalf("hungry2 bound to %s, want big", got)
	}

	// Rejected by a taint (and, elsewhere, by its selector): untainting
	// its node lets it in.
	tainted := schedtest.MakeNode().Name("tainted").Taint("dedicated", "a", v1.TaintEffectNoSchedule).Obj()
	createNode(t, cs, tainted)
	createPod(t, cs, schedtest.MakePod().Name("picky").NodeSelector(v1.LabelHostname, "tainted").Obj())
	// The pod may be tried before the scheduler has seen the new node (all
	// nodes then fail its selector); the node's arrival retries it, so wait
	// for the attempt that met the taint.
	waitFor(t, "picky rejected by the taint", func() (bool, error) {
		cond := scheduledCondition(getPod(t, cs, "picky"))
		if cond == nil || cond.Status != v1.ConditionFalse {
			return false, nil
		}
		return strings.Contains(cond.Message, "untolerated taint {dedicated: a}"), fmt.Errorf("message %q", cond.Message)
	})
	untainted := tainted.DeepCopy()
	untainted.Spec.Taints = nil
	if _, err := cs.CoreV1().Nodes().Update(context.Background(), untainted, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := waitBound(t, cs, "picky"); got != "tainted" {
		t.Fatalf("picky bound to %s", got)
	}
}

// unschedulableAttempts reads scheduler_schedule_attempts_total for the
// attempts that found no node.
func unschedulableAttempts(t testing.TB, m *metrics.Metrics) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.Collectors()...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != "scheduler_schedule_attempts_total" {
			continue
		}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == "unschedulable" {
					n += mt.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// TestPodRejectedByAntiAffinityIsRetriedOnlyWhenTheConflictingPodGoes: with
// InterPodAffinity's queueing hints, a pod its anti-affinity kept out is
// not retried when a placed pod it does not mind is added or deleted (the
// scheduler counts no further unschedulable attempt), and is scheduled once
// the pod it minds is deleted.
func TestPodRejectedByAntiAffinityIsRetriedOnlyWhenTheConflictingPodGoes(t *testing.T) {
	cs := newFakeClientset()
	const zone = "topology.kubernetes.io/zone"
	createNode(t, cs, schedtest.MakeNode().Name("n1").Label(zone, "a").Obj())
	createNode(t, cs, schedtest.MakeNode().Name("n2").Label(zone, "a").Obj())
	createPod(t, cs, schedtest.MakePod().Name("db").Label("app", "db").Node("n1").Obj())
	m := metrics.New()
	startScheduler(t, cs, scheduler.Config{Metrics: m})
	createPod(t, cs, schedtest.MakePod().Name("web").PodAntiAffinity(zone, "app", "db").Obj())
	if msg := waitUnschedulable(t, cs, "web").Message; !strings.HasPrefix(msg, "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules.") {
		t.Fatalf("first attempt: %q", msg)
	}
	waitFor(t, "the first attempt counted", func() (bool, error) { return unschedulableAttempts(t, m) == 1, nil })

	createPod(t, cs, schedtest.MakePod().Name("cache").Label("app", "cache").Node("n2").Obj())
	if err := cs.CoreV1().Pods("default").Delete(context.Background(), "cache", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The probe's add follows the deletion on the pod informer: once it is
	// bound, the deletion has been handled.
	createPod(t, cs, schedtest.MakePod().Name("probe").NodeSelector(v1.LabelHostname, "n1").Obj())
	waitBound(t, cs, "probe")
	time.Sleep(300 * time.Millisecond) // many backoffs (10ms to 50ms)
	if n := unschedulableAttempts(t, m); n != 1 {
		t.Fatalf("an unrelated placed pod added and deleted retried the pod: %v unschedulable attempts, want 1", n)
	}

	if err := cs.CoreV1().Pods("default").Delete(context.Background(), "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBound(t, cs, "web")
}
