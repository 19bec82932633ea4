package nodelifecycle

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newFixture(t *testing.T, objs ...runtime.Object) (*Controller, *fake.Clientset) {
	t.Helper()
	c, client, _ := newFixtureWithInformers(t, objs...)
	return c, client
}

// update puts obj in an informer's cache, as a watch event would.
func update(t *testing.T, inf cache.SharedIndexInformer, obj runtime.Object) {
	t.Helper()
	if err := inf.GetIndexer().Update(obj); err != nil {
		t.Fatal(err)
	}
}

// newController is a controller on f's informers, whose clock stands at now.
func newController(t *testing.T, client *fake.Clientset, f informers.SharedInformerFactory) *Controller {
	t.Helper()
	c, err := New(client, f.Core().V1().Nodes(), f.Coordination().V1().Leases(), f.Core().V1().Pods(), record.NewFakeRecorder(100), Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newFixtureWithInformers(t *testing.T, objs ...runtime.Object) (*Controller, *fake.Clientset, informers.SharedInformerFactory) {
	t.Helper()
	client := controllertest.NewClient(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	c := newController(t, client, f)
	for _, o := range objs {
		switch o.(type) {
		case *corev1.Node:
			controllertest.Load(t, f.Core().V1().Nodes().Informer(), o)
		case *coordinationv1.Lease:
			controllertest.Load(t, f.Coordination().V1().Leases().Informer(), o)
		case *corev1.Pod:
			controllertest.Load(t, f.Core().V1().Pods().Informer(), o)
		}
	}
	client.ClearActions()
	return c, client, f
}

func node(ready corev1.ConditionStatus, heartbeatAgo time.Duration, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: ready, LastHeartbeatTime: metav1.NewTime(now.Add(-heartbeatAgo)),
		}}},
	}
}

// healthy is a Ready node beside n1, so that n1 going down is not every
// node going down (which evicts nothing: master disruption mode).
func healthy(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(now),
		}}},
	}
}

func lease(ago time.Duration) *coordinationv1.Lease {
	ts := metav1.NewMicroTime(now.Add(-ago))
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: LeaseNamespace}, Spec: coordinationv1.LeaseSpec{RenewTime: &ts}}
}

func unreachable(addedAgo time.Duration) corev1.Taint {
	ts := metav1.NewTime(now.Add(-addedAgo))
	return corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &ts}
}

func pod(name string, tolerationSeconds *int64) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: "n1"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if name != "intolerant" {
		// As admission adds them: both node-health taints, the same limit.
		p.Spec.Tolerations = []corev1.Toleration{
			{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: tolerationSeconds},
			{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: tolerationSeconds},
		}
	}
	return p
}

func ptr(v int64) *int64 { return &v }

func TestHeartbeats(t *testing.T) {
	tests := []struct {
		name          string
		node          *corev1.Node
		lease         *coordinationv1.Lease
		wantReady     corev1.ConditionStatus
		wantTaint     string
		wantPodsReady bool
	}{
		{"a fresh lease keeps the node ready", node(corev1.ConditionTrue, 5*time.Minute), lease(10 * time.Second), corev1.ConditionTrue, "", true},
		{"a fresh status heartbeat also counts", node(corev1.ConditionTrue, 10*time.Second), nil, corev1.ConditionTrue, "", true},
		// Seen for the first time, a node is judged from then on: heartbeats that
		// look old (the controller just started, or the node's clock lags) are not.
		{"a node first seen with old heartbeats gets a grace period", node(corev1.ConditionTrue, 5*time.Minute), lease(41 * time.Second), corev1.ConditionTrue, "", true},
		{"an agent reporting NotReady gets the not-ready taint", node(corev1.ConditionFalse, 5*time.Second), nil, corev1.ConditionFalse, corev1.TaintNodeNotReady, true},
		{"a node ready again loses the taint", node(corev1.ConditionTrue, time.Second, unreachable(time.Minute)), nil, corev1.ConditionTrue, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{tc.node, healthy("n2", nil), pod("tolerant", nil)}
			if tc.lease != nil {
				objs = append(objs, tc.lease)
			}
			c, client := newFixture(t, objs...)
			if err := c.sync(context.Background(), "n1"); err != nil {
				t.Fatal(err)
			}
			n, _ := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
			r := readyCondition(n)
			if r.Status != tc.wantReady {
				t.Errorf("Ready = %s, want %s", r.Status, tc.wantReady)
			}
			if tc.wantReady == corev1.ConditionUnknown && r.Reason != NodeStatusUnknown {
				t.Errorf("Ready reason = %q", r.Reason)
			}
			// The NoExecute taint, and the same key NoSchedule (TaintNodesByCondition).
			var want []string
			if tc.wantTaint != "" {
				want = []string{tc.wantTaint + ":NoExecute", tc.wantTaint + ":NoSchedule"}
			}
			if got := taintList(n); !slices.Equal(got, want) {
				t.Errorf("taints = %v, want %v", got, want)
			}
			p, err := client.CoreV1().Pods("ns").Get(context.Background(), "tolerant", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("a pod tolerating the taint forever was evicted: %v", err)
			}
			if ready := p.Status.Conditions[0].Status == corev1.ConditionTrue; ready != tc.wantPodsReady {
				t.Errorf("pod ready = %v, want %v", ready, tc.wantPodsReady)
			}
		})
	}
}

// A node is unreachable once neither its Lease renewal nor its Ready
// heartbeat changed for the grace period, by the controller's clock: the
// heartbeats' own times (the node's clock) only count as changes.
func TestHeartbeatsJudgedByTheControllersClock(t *testing.T) {
	ctx := context.Background()
	// The node's clock is an hour behind the controller's.
	lagging := lease(time.Hour)
	c, client, f := newFixtureWithInformers(t, node(corev1.ConditionTrue, time.Hour), healthy("n2", nil), lagging, pod("tolerant", nil))
	clock := now
	c.now = func() time.Time { return clock }
	ready := func() corev1.ConditionStatus {
		t.Helper()
		n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return readyCondition(n).Status
	}
	step := func(d time.Duration) {
		t.Helper()
		clock = clock.Add(d)
		if err := c.sync(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
	}
	step(0)
	// Renewed every 10 s (by its own clock), the node stays Ready for minutes.
	for range 12 {
		renewed := lagging.DeepCopy()
		ts := metav1.NewMicroTime(lagging.Spec.RenewTime.Add(10 * time.Second))
		renewed.Spec.RenewTime = &ts
		lagging = renewed
		update(t, f.Coordination().V1().Leases().Informer(), lagging)
		step(10 * time.Second)
		if got := ready(); got != corev1.ConditionTrue {
			t.Fatalf("after %s of renewals: Ready = %s", clock.Sub(now), got)
		}
	}
	// It stops renewing: Unknown once the grace period has passed since the
	// last renewal was seen, not before.
	step(DefaultGracePeriod)
	if got := ready(); got != corev1.ConditionTrue {
		t.Fatalf("%s after the last renewal: Ready = %s", DefaultGracePeriod, got)
	}
	step(time.Second + time.Millisecond)
	if got := ready(); got != corev1.ConditionUnknown {
		t.Fatalf("%s after the last renewal: Ready = %s, want Unknown", DefaultGracePeriod+time.Second, got)
	}
	n, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if got := taintList(n); !slices.Equal(got, []string{corev1.TaintNodeUnreachable + ":NoExecute", corev1.TaintNodeUnreachable + ":NoSchedule"}) {
		t.Errorf("taints = %v", got)
	}
	if p, _ := client.CoreV1().Pods("ns").Get(ctx, "tolerant", metav1.GetOptions{}); p.Status.Conditions[0].Status != corev1.ConditionFalse {
		t.Errorf("pod still ready on an unreachable node")
	}
}

// A node that never posted a status nor renewed a Lease is judged from its
// registration, with the startup grace period (60 s, as kube's
// --node-startup-grace-period) rather than the monitor's 50 s, and stays
// Unknown once marked.
func TestNodeNeverHeardFrom(t *testing.T) {
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(now.Add(-50 * time.Second))}}
	c, client, f := newFixtureWithInformers(t, n)
	clock := now
	c.now = func() time.Time { return clock }
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); readyCondition(got) != nil {
		t.Fatalf("50 s after registering, within the startup grace period, Ready = %+v, want none", readyCondition(got))
	}
	clock = clock.Add(11 * time.Second)
	for i := range 3 {
		if err := c.sync(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		got, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		r := readyCondition(got)
		if r == nil || r.Status != corev1.ConditionUnknown || r.Reason != "NodeStatusNeverUpdated" {
			t.Fatalf("sync %d: Ready = %+v, want Unknown, NodeStatusNeverUpdated", i, r)
		}
		// The informer sees the controller's write.
		update(t, f.Core().V1().Nodes().Informer(), got)
		clock = clock.Add(5 * time.Second)
	}
}

// Options.StartupGracePeriod replaces the default.
func TestStartupGracePeriodOption(t *testing.T) {
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(now.Add(-21 * time.Second))}}
	client := controllertest.NewClient(n)
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, f.Core().V1().Nodes(), f.Coordination().V1().Leases(), f.Core().V1().Pods(), record.NewFakeRecorder(100),
		Options{StartupGracePeriod: 20 * time.Second, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.Load(t, f.Core().V1().Nodes().Informer(), n)
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	got, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if r := readyCondition(got); r == nil || r.Status != corev1.ConditionUnknown {
		t.Fatalf("21 s after registering with a 20 s startup grace period, Ready = %+v, want Unknown", r)
	}
}

// deletedPods are the pods the client was asked to delete, sorted.
func deletedPods(client *fake.Clientset) []string {
	var deleted []string
	for _, a := range controllertest.Filter(client.Actions(), "delete", "pods") {
		deleted = append(deleted, a.(k8stesting.DeleteAction).GetName())
	}
	slices.Sort(deleted)
	return slices.Compact(deleted) // the fixture's cache keeps deleted pods
}

// Pods that do not tolerate the taint go at once; those that tolerate it for
// a while, that long after the controller first saw them on the tainted
// node: not by the taint's timeAdded (200 s ago here), as Kubernetes' taint
// eviction controller counts. A pod that tolerates a taint for an hour, bound
// to a node tainted two hours ago, runs for an hour, not an instant (and is
// not replaced by one scheduled back onto the node and deleted again).
func TestEviction(t *testing.T) {
	ctx := context.Background()
	n := node(corev1.ConditionUnknown, 10*time.Minute, unreachable(200*time.Second))
	n.Status.Conditions[0].Reason = NodeStatusUnknown
	c, client := newFixture(t, n, healthy("n2", nil), lease(10*time.Minute),
		pod("intolerant", nil),
		pod("forever", nil),
		pod("shorter", ptr(100)),
		pod("waiting", ptr(300)),
		pod("zero", ptr(0)),
	)
	clock := now
	c.now = func() time.Time { return clock }
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if got, want := deletedPods(client), []string{"intolerant", "zero"}; !slices.Equal(got, want) {
		t.Errorf("evicted at once %v, want %v", got, want)
	}
	// Each was first marked as Kubernetes' taint manager marks them.
	var marked []string
	for _, a := range controllertest.Filter(client.Actions(), "patch", "pods") {
		p := a.(k8stesting.PatchAction)
		if p.GetSubresource() == "status" && strings.Contains(string(p.GetPatch()), `"reason":"DeletionByTaintManager"`) &&
			strings.Contains(string(p.GetPatch()), `"type":"DisruptionTarget"`) {
			marked = append(marked, p.GetName())
		}
	}
	slices.Sort(marked)
	if !slices.Equal(marked, deletedPods(client)) {
		t.Errorf("marked DisruptionTarget %v, want every evicted pod %v", marked, deletedPods(client))
	}
	events := controllertest.Events(c.recorder.(*record.FakeRecorder).Events)
	if want := "Normal TaintManagerEviction Marking for deletion Pod ns/intolerant"; !slices.Contains(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}

	for _, step := range []struct {
		after time.Duration
		want  []string
	}{
		{99 * time.Second, []string{"intolerant", "zero"}},
		{time.Second, []string{"intolerant", "shorter", "zero"}},
		{199 * time.Second, []string{"intolerant", "shorter", "zero"}},
		{time.Second, []string{"intolerant", "shorter", "waiting", "zero"}},
	} {
		clock = clock.Add(step.after)
		if err := c.sync(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if got := deletedPods(client); !slices.Equal(got, step.want) {
			t.Fatalf("%s after the first sync: evicted %v, want %v", clock.Sub(now), got, step.want)
		}
	}
}

// What the taint eviction part does is recorded under its own component
// (Options.EvictionRecorder: kube-controller-manager's taint eviction
// controller), the rest (a pod marked not ready) under the node lifecycle
// controller's.
func TestTaintEvictionEventsHaveTheirOwnRecorder(t *testing.T) {
	ts := metav1.NewTime(now)
	n := node(corev1.ConditionFalse, time.Second, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute, TimeAdded: &ts})
	c, _, _ := newFixtureWithInformers(t, n, healthy("n2", nil), pod("intolerant", nil))
	eviction := record.NewFakeRecorder(100)
	c.evictionRec = eviction
	if err := c.sync(context.Background(), "n1"); err != nil {
		t.Fatal(err)
	}
	if got, want := controllertest.Events(eviction.Events), []string{"Normal TaintManagerEviction Marking for deletion Pod ns/intolerant"}; !slices.Equal(got, want) {
		t.Errorf("taint eviction Events %q, want %q", got, want)
	}
	for _, e := range controllertest.Events(c.recorder.(*record.FakeRecorder).Events) {
		if strings.Contains(e, "TaintManagerEviction") {
			t.Errorf("node lifecycle recorder got %q", e)
		}
	}
}

// A scheduled deletion is cancelled, with Kubernetes' event, when the node
// loses its NoExecute taint; it is kept as it was while the taint changes
// from not-ready to unreachable.
func TestEvictionCancelled(t *testing.T) {
	ctx := context.Background()
	ts := metav1.NewTime(now)
	n := node(corev1.ConditionFalse, time.Second, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute, TimeAdded: &ts})
	c, client, f := newFixtureWithInformers(t, n, healthy("n2", nil), pod("waiting", ptr(300)))
	clock := now
	c.now = func() time.Time { return clock }
	recorder := c.recorder.(*record.FakeRecorder)
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	// 200 s later the node is unreachable: the taint is swapped, the pod's
	// deletion stays due 300 s after it was first seen.
	clock = clock.Add(200 * time.Second)
	unknown := n.DeepCopy()
	unknown.Status.Conditions[0].Status = corev1.ConditionUnknown
	update(t, f.Core().V1().Nodes().Informer(), unknown)
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	got, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if !slices.Contains(taintList(got), corev1.TaintNodeUnreachable+":NoExecute") {
		t.Fatalf("taints %v, want unreachable:NoExecute", taintList(got))
	}
	update(t, f.Core().V1().Nodes().Informer(), got)
	clock = clock.Add(100 * time.Second)
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if got := deletedPods(client); !slices.Equal(got, []string{"waiting"}) {
		t.Fatalf("300 s after the pod was first seen on the tainted node: evicted %v, want [waiting]", got)
	}

	// Again, but the node is Ready before the toleration runs out.
	c, client, f = newFixtureWithInformers(t, n, healthy("n2", nil), pod("waiting", ptr(300)))
	clock = now
	c.now = func() time.Time { return clock }
	recorder = c.recorder.(*record.FakeRecorder)
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(100 * time.Second)
	ready := n.DeepCopy()
	ready.Status.Conditions[0].Status, ready.Status.Conditions[0].LastHeartbeatTime = corev1.ConditionTrue, metav1.NewTime(clock)
	update(t, f.Core().V1().Nodes().Informer(), ready)
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	got, _ = client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if len(got.Spec.Taints) != 0 {
		t.Fatalf("taints %v on a Ready node", taintList(got))
	}
	update(t, f.Core().V1().Nodes().Informer(), got)
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if want := "Normal TaintManagerEviction Cancelling deletion of Pod ns/waiting"; !slices.Contains(controllertest.Events(recorder.Events), want) {
		t.Errorf("no event %q", want)
	}
	// Tainted again later: a new, whole toleration.
	clock = clock.Add(time.Hour)
	update(t, f.Core().V1().Nodes().Informer(), n)
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if got := deletedPods(client); len(got) != 0 {
		t.Errorf("evicted %v at once on a node tainted again", got)
	}
}

func TestTolerationLimit(t *testing.T) {
	taints := []corev1.Taint{unreachable(100 * time.Second)}
	if limit, forever, tolerated := tolerationLimit(pod("p", ptr(300)), taints); forever || !tolerated || limit != 300*time.Second {
		t.Errorf("limit = %s forever=%v tolerated=%v, want 300s", limit, forever, tolerated)
	}
	if _, forever, tolerated := tolerationLimit(pod("p", nil), taints); !forever || !tolerated {
		t.Errorf("forever=%v tolerated=%v, want tolerated forever", forever, tolerated)
	}
	if _, _, tolerated := tolerationLimit(pod("intolerant", nil), taints); tolerated {
		t.Errorf("a pod without tolerations tolerates the taint")
	}
	// The first toleration of a taint is the one used, as Kubernetes' taint
	// eviction controller uses it, whether a later one is shorter or longer.
	p := pod("p", nil)
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists, TolerationSeconds: ptr(150)})
	if _, forever, _ := tolerationLimit(p, taints); !forever {
		t.Errorf("a pod whose first toleration of the taint has no limit is not kept forever")
	}
	p = pod("p", ptr(600))
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists, TolerationSeconds: ptr(150)})
	if limit, _, _ := tolerationLimit(p, taints); limit != 600*time.Second {
		t.Errorf("limit = %s, want the first toleration's 600s", limit)
	}
	// Each taint's own first toleration; the shortest of those.
	two := append(taints, corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoExecute})
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "maintenance", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr(60)})
	if limit, _, _ := tolerationLimit(p, two); limit != 150*time.Second {
		t.Errorf("limit = %s, want 150s (the first toleration of maintenance)", limit)
	}
}

func taintList(n *corev1.Node) []string {
	var out []string
	for _, t := range n.Spec.Taints {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	return out
}

func TestTaintNodesByCondition(t *testing.T) {
	cond := func(typ corev1.NodeConditionType, st corev1.ConditionStatus) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: st}
	}
	userTaint := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name          string
		conditions    []corev1.NodeCondition
		unschedulable bool
		taints        []corev1.Taint
		want          []string
	}{
		{name: "memory pressure", conditions: []corev1.NodeCondition{cond(corev1.NodeMemoryPressure, corev1.ConditionTrue)},
			want: []string{"node.kubernetes.io/memory-pressure:NoSchedule"}},
		{name: "disk and PID pressure, network unavailable",
			conditions: []corev1.NodeCondition{cond(corev1.NodeDiskPressure, corev1.ConditionTrue), cond(corev1.NodePIDPressure, corev1.ConditionTrue),
				cond(corev1.NodeNetworkUnavailable, corev1.ConditionTrue), cond(corev1.NodeMemoryPressure, corev1.ConditionFalse)},
			want: []string{"node.kubernetes.io/disk-pressure:NoSchedule", "node.kubernetes.io/network-unavailable:NoSchedule", "node.kubernetes.io/pid-pressure:NoSchedule"}},
		{name: "a cordoned node", unschedulable: true, want: []string{"node.kubernetes.io/unschedulable:NoSchedule"}},
		{name: "pressure gone: its taint goes, a user's taint stays",
			conditions: []corev1.NodeCondition{cond(corev1.NodeMemoryPressure, corev1.ConditionFalse)},
			taints:     []corev1.Taint{userTaint, {Key: corev1.TaintNodeMemoryPressure, Effect: corev1.TaintEffectNoSchedule}, {Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}},
			want:       []string{"dedicated:NoSchedule"}},
		{name: "a taint already there is kept as it is",
			conditions: []corev1.NodeCondition{cond(corev1.NodeDiskPressure, corev1.ConditionTrue)},
			taints:     []corev1.Taint{{Key: corev1.TaintNodeDiskPressure, Effect: corev1.TaintEffectNoSchedule}, userTaint},
			want:       []string{"node.kubernetes.io/disk-pressure:NoSchedule", "dedicated:NoSchedule"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := node(corev1.ConditionTrue, time.Second, tc.taints...)
			n.Spec.Unschedulable = tc.unschedulable
			n.Status.Conditions = append(n.Status.Conditions, tc.conditions...)
			c, client := newFixture(t, n)
			if err := c.sync(context.Background(), "n1"); err != nil {
				t.Fatal(err)
			}
			got, _ := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
			if !slices.Equal(taintList(got), tc.want) {
				t.Errorf("taints %v, want %v", taintList(got), tc.want)
			}
			// As kube-controller-manager (SwapNodeControllerTaint), a taint the
			// controller adds has its timeAdded; one already there keeps its own.
			for _, tn := range got.Spec.Taints {
				had := slices.ContainsFunc(tc.taints, func(o corev1.Taint) bool { return o.Key == tn.Key && o.Effect == tn.Effect })
				switch {
				case had && tn.TimeAdded != nil:
					t.Errorf("taint %s kept as it was got timeAdded %v", tn.Key, tn.TimeAdded)
				case !had && (tn.TimeAdded == nil || !tn.TimeAdded.Time.Equal(now)):
					t.Errorf("taint %s added with timeAdded %v, want now", tn.Key, tn.TimeAdded)
				}
			}
		})
	}
}

func notReady(name string, labels map[string]string) *corev1.Node {
	n := healthy(name, labels)
	n.Status.Conditions[0].Status = corev1.ConditionFalse
	return n
}

func TestClassifyZones(t *testing.T) {
	a, b := map[string]string{corev1.LabelTopologyZone: "a"}, map[string]string{corev1.LabelTopologyZone: "b"}
	excluded := map[string]string{LabelExcludeDisruption: ""}
	tests := []struct {
		name    string
		nodes   []*corev1.Node
		want    map[string]zoneState
		allFull bool
	}{
		{"all Ready", []*corev1.Node{healthy("1", nil), healthy("2", nil)}, map[string]zoneState{"": zoneNormal}, false},
		{"the only node down", []*corev1.Node{notReady("1", nil)}, map[string]zoneState{"": zoneFull}, true},
		{"two of three down: too few to be a disruption", []*corev1.Node{notReady("1", nil), notReady("2", nil), healthy("3", nil)},
			map[string]zoneState{"": zoneNormal}, false},
		{"three of five down", []*corev1.Node{notReady("1", nil), notReady("2", nil), notReady("3", nil), healthy("4", nil), healthy("5", nil)},
			map[string]zoneState{"": zonePartial}, false},
		{"one zone gone, the other healthy", []*corev1.Node{notReady("1", a), notReady("2", a), healthy("3", b)},
			map[string]zoneState{"/a": zoneFull, "/b": zoneNormal}, false},
		{"every zone gone", []*corev1.Node{notReady("1", a), notReady("2", b)},
			map[string]zoneState{"/a": zoneFull, "/b": zoneFull}, true},
		// kube-controller-manager leaves nodes labelled exclude-disruption out.
		{"three of five down, two of them left out", []*corev1.Node{notReady("1", nil), notReady("2", excluded), notReady("3", excluded), healthy("4", nil), healthy("5", nil)},
			map[string]zoneState{"": zoneNormal}, false},
		{"the only node counted is Ready", []*corev1.Node{notReady("1", excluded), healthy("2", nil)}, map[string]zoneState{"": zoneNormal}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := classify(tc.nodes, DefaultEviction().UnhealthyZoneThreshold)
			if !maps.Equal(d.zones, tc.want) || d.allFull != tc.allFull {
				t.Errorf("zones %v allFull %v, want %v %v", d.zones, d.allFull, tc.want, tc.allFull)
			}
		})
	}
}

// When no node is Ready the control plane is more likely cut off than every
// node dead: the node is still marked Unknown and its pods not ready, but
// the NoExecute taint put on before comes off and nothing is evicted.
func TestMasterDisruptionModeEvictsNothing(t *testing.T) {
	n := node(corev1.ConditionTrue, 10*time.Minute, unreachable(200*time.Second))
	c, client := newFixture(t, n, pod("intolerant", nil))
	c.now = func() time.Time { return now.Add(time.Hour) } // first seen an hour ago…
	c.health["n1"] = &nodeHealth{probe: now, heartbeat: n.Status.Conditions[0].LastHeartbeatTime}
	if err := c.sync(context.Background(), "n1"); err != nil {
		t.Fatal(err)
	}
	got, _ := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	if r := readyCondition(got); r.Status != corev1.ConditionUnknown {
		t.Errorf("Ready = %s, want Unknown", r.Status)
	}
	if taints := taintList(got); !slices.Equal(taints, []string{corev1.TaintNodeUnreachable + ":NoSchedule"}) {
		t.Errorf("taints = %v, want the NoSchedule one only", taints)
	}
	if d := controllertest.Filter(client.Actions(), "delete", "pods"); len(d) != 0 {
		t.Errorf("evicted %d pods in master disruption mode", len(d))
	}
}

// In a small zone where most nodes are down at once, no NoExecute taint is
// put on (kube's partial disruption); NoSchedule taints still keep new pods
// off the nodes.
func TestPartialDisruptionStopsNoExecuteTaints(t *testing.T) {
	n := notReady("n1", nil)
	c, client := newFixture(t, n, notReady("n2", nil), notReady("n3", nil), healthy("n4", nil), pod("intolerant", nil))
	if err := c.sync(context.Background(), "n1"); err != nil {
		t.Fatal(err)
	}
	got, _ := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	if taints := taintList(got); !slices.Equal(taints, []string{corev1.TaintNodeNotReady + ":NoSchedule"}) {
		t.Errorf("taints = %v, want the NoSchedule one only", taints)
	}
}

// In a healthy zone NoExecute taints go on one node at a time, at most 0.1
// nodes a second (kube's --node-eviction-rate).
func TestNoExecuteTaintsArePaced(t *testing.T) {
	objs := []runtime.Object{notReady("n1", nil), notReady("n2", nil)}
	for i := range 8 {
		objs = append(objs, healthy(fmt.Sprintf("ok%d", i), nil))
	}
	c, client := newFixture(t, objs...)
	for _, name := range []string{"n1", "n2"} {
		if err := c.sync(context.Background(), name); err != nil {
			t.Fatal(err)
		}
	}
	var tainted []string
	for _, name := range []string{"n1", "n2"} {
		got, _ := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if slices.Contains(taintList(got), corev1.TaintNodeNotReady+":NoExecute") {
			tainted = append(tainted, name)
		}
	}
	if !slices.Equal(tainted, []string{"n1"}) {
		t.Errorf("tainted NoExecute at once: %v, want n1 only (the next in 10 s)", tainted)
	}
}

// With --large-cluster-size-threshold 3 a partly disrupted zone of four
// nodes is large: its nodes are tainted, at the secondary rate.
func TestEvictionSettings(t *testing.T) {
	e := DefaultEviction()
	e.LargeClusterSizeThreshold = 3
	c, client := newFixture(t, notReady("n1", nil), notReady("n2", nil), notReady("n3", nil), healthy("n4", nil))
	c.eviction = e
	if err := c.sync(context.Background(), "n1"); err != nil {
		t.Fatal(err)
	}
	got, _ := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	if !slices.Contains(taintList(got), corev1.TaintNodeNotReady+":NoExecute") {
		t.Errorf("taints = %v, want NoExecute in a large zone", taintList(got))
	}
	for _, bad := range []func(*Eviction){
		func(e *Eviction) { e.Rate = 0 },
		func(e *Eviction) { e.SecondaryRate = -1 },
		func(e *Eviction) { e.Rate = float32(math.Inf(1)) },
		func(e *Eviction) { e.SecondaryRate = float32(math.Inf(1)) },
		func(e *Eviction) { e.UnhealthyZoneThreshold = 1.5 },
		func(e *Eviction) { e.LargeClusterSizeThreshold = -1 },
	} {
		e := DefaultEviction()
		bad(&e)
		if e.Check() == nil {
			t.Errorf("%+v accepted", e)
		}
	}
}

// A node tainted not-ready:NoExecute that then stops heartbeating gets the
// unreachable taint in its place at once, as kube-controller-manager swaps
// them, even where no new NoExecute taint may go on (a small, partly
// disrupted zone): it must not be left without one.
func TestNotReadyTaintSwappedForUnreachableAtOnce(t *testing.T) {
	ts := metav1.NewTime(now.Add(-time.Minute))
	n := node(corev1.ConditionUnknown, time.Minute, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute, TimeAdded: &ts})
	c, client := newFixture(t, n, notReady("n2", nil), notReady("n3", nil), healthy("n4", nil))
	if err := c.sync(context.Background(), "n1"); err != nil {
		t.Fatal(err)
	}
	got, _ := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	if taints := taintList(got); !slices.Equal(taints, []string{corev1.TaintNodeUnreachable + ":NoExecute", corev1.TaintNodeUnreachable + ":NoSchedule"}) {
		t.Errorf("taints = %v, want unreachable NoExecute in place of not-ready", taints)
	}
}

// Pods of a node marked Unknown are marked not ready, each with Kubernetes'
// "NodeNotReady" warning; when an update fails the controller tries again on
// the next sync, although the node is already Unknown (kube's nodesToRetry),
// so a Service does not keep sending traffic to a pod on a dead node.
func TestPodsMarkedNotReadyRetried(t *testing.T) {
	ctx := context.Background()
	c, client, f := newFixtureWithInformers(t, node(corev1.ConditionTrue, time.Hour), healthy("n2", nil), pod("a", nil), pod("b", nil))
	c.health["n1"] = &nodeHealth{probe: now.Add(-time.Minute), heartbeat: metav1.NewTime(now.Add(-time.Hour))}
	failed := false
	client.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		u := a.(k8stesting.UpdateAction)
		if u.GetSubresource() == "status" && u.GetObject().(*corev1.Pod).Name == "a" && !failed {
			failed = true
			return true, nil, fmt.Errorf("the server is busy")
		}
		return false, nil, nil
	})
	if err := c.sync(ctx, "n1"); err == nil {
		t.Fatal("sync hid the failed pod update")
	}
	n, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if r := readyCondition(n); r.Status != corev1.ConditionUnknown {
		t.Fatalf("Ready = %s, want Unknown", r.Status)
	}
	update(t, f.Core().V1().Nodes().Informer(), n)
	b, _ := client.CoreV1().Pods("ns").Get(ctx, "b", metav1.GetOptions{})
	update(t, f.Core().V1().Pods().Informer(), b)
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		p, _ := client.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{})
		if r := p.Status.Conditions[0]; r.Status != corev1.ConditionFalse || r.Reason != "" {
			t.Errorf("pod %s Ready = %s (reason %q), want False with its reason kept", name, r.Status, r.Reason)
		}
	}
	var warnings int
	for _, e := range controllertest.Events(c.recorder.(*record.FakeRecorder).Events) {
		if e == "Warning NodeNotReady Node is not ready" {
			warnings++
		}
	}
	// One per try, as kube records it also for the update that failed.
	if warnings != 3 {
		t.Errorf("%d NodeNotReady pod warnings, want 3: one per pod, and one for the failed try", warnings)
	}
}

// Nodes labelled node.kubernetes.io/exclude-disruption do not count towards
// their zone's disruption: three of four nodes down, two of them left out,
// is one of two, a healthy zone, and the node is tainted NoExecute. A node
// left out whose zone has no node counted is tainted at the normal pace.
func TestExcludedFromDisruption(t *testing.T) {
	excluded := map[string]string{LabelExcludeDisruption: "true"}
	c, client := newFixture(t, notReady("n1", nil), notReady("n2", excluded), notReady("n3", excluded), healthy("n4", nil))
	if err := c.sync(context.Background(), "n1"); err != nil {
		t.Fatal(err)
	}
	got, _ := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	if !slices.Contains(taintList(got), corev1.TaintNodeNotReady+":NoExecute") {
		t.Errorf("taints = %v, want not-ready:NoExecute", taintList(got))
	}

	alone := notReady("n1", map[string]string{LabelExcludeDisruption: "", corev1.LabelTopologyZone: "x"})
	c, client = newFixture(t, alone, healthy("n2", nil))
	if err := c.sync(context.Background(), "n1"); err != nil {
		t.Fatal(err)
	}
	got, _ = client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	if !slices.Contains(taintList(got), corev1.TaintNodeNotReady+":NoExecute") {
		t.Errorf("taints = %v, want not-ready:NoExecute in a zone of excluded nodes", taintList(got))
	}
}

// As kube-controller-manager, the controller records RegisteredNode when it
// first sees a node and RemovingNode when the node is gone.
func TestNodeRegisteredAndRemovedEvents(t *testing.T) {
	ctx := context.Background()
	n := node(corev1.ConditionTrue, time.Second)
	c, _, f := newFixtureWithInformers(t, n, healthy("n2", nil))
	recorder := c.recorder.(*record.FakeRecorder)
	for range 2 {
		if err := c.sync(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := controllertest.Events(recorder.Events), []string{"Normal RegisteredNode Node n1 event: Registered Node n1 in Controller"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if err := f.Core().V1().Nodes().Informer().GetIndexer().Delete(n); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := c.sync(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := controllertest.Events(recorder.Events), []string{"Normal RemovingNode Node n1 event: Removing Node n1 from Controller"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

// A pod whose deletion failed (all the tries of one attempt) is deleted at
// the next sync, its toleration not counted afresh; its deletion by the
// controller is not announced as a cancellation.
func TestEvictionRetried(t *testing.T) {
	ctx := context.Background()
	ts := metav1.NewTime(now)
	n := node(corev1.ConditionFalse, time.Second, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute, TimeAdded: &ts})
	c, client, f := newFixtureWithInformers(t, n, healthy("n2", nil), pod("waiting", ptr(60)))
	clock := now
	c.now = func() time.Time { return clock }
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	failed := 0
	client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failed < evictTries {
			failed++
			return true, nil, fmt.Errorf("the server is busy")
		}
		// The watch's deletion event may be handled before Delete returns.
		c.cancelEviction("n1", "ns/waiting", true)
		return false, nil, nil
	})
	clock = clock.Add(time.Minute)
	if err := c.sync(ctx, "n1"); err == nil {
		t.Fatal("sync hid the failed deletion")
	}
	// The informer shows the node as that sync wrote it (unreachable):
	// the taints it judged already.
	written, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	update(t, f.Core().V1().Nodes().Informer(), written)
	c.nodeUpdated(n, written)
	clock = clock.Add(time.Second)
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("ns").Get(ctx, "waiting", metav1.GetOptions{}); err == nil {
		t.Fatal("the pod is still there a second after its deletion failed")
	}
	for _, e := range controllertest.Events(c.recorder.(*record.FakeRecorder).Events) {
		if strings.Contains(e, "Cancelling") {
			t.Errorf("event %q for a pod the controller deleted", e)
		}
	}
}

// notReadyNode is node n1, not ready and tainted not-ready:NoExecute now.
func notReadyNode() *corev1.Node {
	ts := metav1.NewTime(now)
	return node(corev1.ConditionFalse, time.Second, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute, TimeAdded: &ts})
}

// withPodsStaying is a fixture with node n (and a healthy n2) and pod p,
// whose deletions are answered but leave the pods there, terminating, as
// on a node whose agent is down.
func withPodsStaying(t *testing.T, n *corev1.Node, p *corev1.Pod) (*Controller, *fake.Clientset, informers.SharedInformerFactory) {
	t.Helper()
	c, client, f := newFixtureWithInformers(t, n, healthy("n2", nil), p)
	client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil
	})
	return c, client, f
}

// As Kubernetes' taint eviction controller, which looks at every pod of a
// node again whenever the node's NoExecute taints change, a pod the
// controller deleted and still terminating (its node agent is down) is
// evicted again when the taints change (not-ready swapped for unreachable
// here), once, and not at each sync while they stay as they are.
func TestTerminatingPodEvictedAgainWhenNoExecuteTaintsChange(t *testing.T) {
	ctx := context.Background()
	n, p := notReadyNode(), pod("intolerant", nil)
	c, client, f := withPodsStaying(t, n, p)
	clock := now
	c.now = func() time.Time { return clock }
	recorder := c.recorder.(*record.FakeRecorder)
	deletions := func() int { return len(controllertest.Filter(client.Actions(), "delete", "pods")) }
	const event = "Normal TaintManagerEviction Marking for deletion Pod ns/intolerant"
	count := func(events []string) (n int) {
		for _, e := range events {
			if e == event {
				n++
			}
		}
		return n
	}
	for range 2 {
		if err := c.sync(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		clock = clock.Add(5 * time.Second)
	}
	if got := deletions(); got != 1 {
		t.Fatalf("%d deletions while the taints stay the same, want 1", got)
	}
	if got := count(controllertest.Events(recorder.Events)); got != 1 {
		t.Fatalf("%d %q events, want 1", got, event)
	}
	unknown := n.DeepCopy()
	unknown.Status.Conditions[0].Status = corev1.ConditionUnknown
	update(t, f.Core().V1().Nodes().Informer(), unknown)
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	got, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if !slices.Contains(taintList(got), corev1.TaintNodeUnreachable+":NoExecute") {
		t.Fatalf("taints %v, want unreachable:NoExecute", taintList(got))
	}
	update(t, f.Core().V1().Nodes().Informer(), got)
	for range 2 {
		clock = clock.Add(5 * time.Second)
		if err := c.sync(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
	}
	if got := deletions(); got != 2 {
		t.Errorf("%d deletions, want 2: once more after the NoExecute taints changed", got)
	}
	if got := count(controllertest.Events(recorder.Events)); got != 1 {
		t.Errorf("%d more %q events after the taints changed, want 1", got, event)
	}
}

// As Kubernetes' taint eviction controller, which judges every pod of a
// node again on each change of its NoExecute taints that the node informer
// shows (NodeUpdated, handleNodeUpdate), a pod deleted already and still
// terminating is evicted again when a NoExecute taint came and went between
// two checks of the node, though the taints are back as they were. The
// informer's report of a taint this controller wrote and judged already is
// no second change.
func TestEvictedAgainWhenNoExecuteTaintsChangedAndChangedBack(t *testing.T) {
	ctx := context.Background()
	n, p := notReadyNode(), pod("intolerant", nil)
	c, client, f := withPodsStaying(t, n, p)
	deletions := func() int { return len(controllertest.Filter(client.Actions(), "delete", "pods")) }
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	maintenance := n.DeepCopy()
	maintenance.Spec.Taints = append(maintenance.Spec.Taints, corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoExecute})
	c.nodeUpdated(n, maintenance)
	c.nodeUpdated(maintenance, n)
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if got := deletions(); got != 2 {
		t.Fatalf("%d deletions, want 2: once more after a NoExecute taint came and went", got)
	}
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if got := deletions(); got != 2 {
		t.Fatalf("%d deletions, want still 2: nothing changed since", got)
	}

	// The node goes unreachable: this controller swaps the taints and
	// evicts the pod again in the same sync; the informer then reports
	// that write.
	unknown := n.DeepCopy()
	unknown.Status.Conditions[0].Status = corev1.ConditionUnknown
	update(t, f.Core().V1().Nodes().Informer(), unknown)
	c.nodeUpdated(n, unknown)
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	got, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if !slices.Contains(taintList(got), corev1.TaintNodeUnreachable+":NoExecute") {
		t.Fatalf("taints %v, want unreachable:NoExecute", taintList(got))
	}
	if n := deletions(); n != 3 {
		t.Fatalf("%d deletions, want 3: once more after the taints were swapped", n)
	}
	update(t, f.Core().V1().Nodes().Informer(), got)
	c.nodeUpdated(unknown, got)
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if n := deletions(); n != 3 {
		t.Errorf("%d deletions, want still 3: the informer showed the taints already judged", n)
	}
}

// As Kubernetes' taint eviction controller, which judges a pod again when
// its tolerations change (PodUpdated, handlePodUpdate), a pod deleted
// already and still terminating whose tolerations changed is judged again:
// it now tolerates the taint for a minute, so it is deleted again a minute
// later.
func TestEvictedPodJudgedAgainWhenItsTolerationsChange(t *testing.T) {
	ctx := context.Background()
	n, p := notReadyNode(), pod("intolerant", nil)
	c, client, f := withPodsStaying(t, n, p)
	clock := now
	c.now = func() time.Time { return clock }
	c.grace = time.Hour // the node stays not ready, its taint as it is
	deletions := func() int { return len(controllertest.Filter(client.Actions(), "delete", "pods")) }
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	retolerate(t, c, f, p, &clock, deletions, 1, 1, 2, 2)
}

// A deletion scheduled already is kept as it is when the NoExecute taints
// change, even when the pod tolerates the new ones for less time: Kubernetes'
// taint eviction controller (processPodOnNode) keeps the scheduled work when
// it was created before now, whatever the new tolerations' minimum. A pod
// tolerating not-ready for 300 s and unreachable for 10 s goes 300 s after it
// was first seen on the node tainted not-ready, not 10 s after the swap.
func TestScheduledEvictionKeptWhenTaintsSwap(t *testing.T) {
	ctx := context.Background()
	ts := metav1.NewTime(now)
	n := node(corev1.ConditionFalse, time.Second, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute, TimeAdded: &ts})
	p := pod("p", nil)
	p.Spec.Tolerations = []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(300)},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(10)},
	}
	c, client, f := newFixtureWithInformers(t, n, healthy("n2", nil), p)
	clock := now
	c.now = func() time.Time { return clock }
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(100 * time.Second)
	unknown := n.DeepCopy()
	unknown.Status.Conditions[0].Status = corev1.ConditionUnknown
	update(t, f.Core().V1().Nodes().Informer(), unknown)
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	got, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if !slices.Contains(taintList(got), corev1.TaintNodeUnreachable+":NoExecute") {
		t.Fatalf("taints %v, want unreachable:NoExecute", taintList(got))
	}
	update(t, f.Core().V1().Nodes().Informer(), got)
	for _, step := range []struct {
		after time.Duration
		want  []string
	}{
		{11 * time.Second, nil},
		{188 * time.Second, nil},
		{time.Second, []string{"p"}},
	} {
		clock = clock.Add(step.after)
		if err := c.sync(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if got := deletedPods(client); !slices.Equal(got, step.want) {
			t.Fatalf("%s after the pod was first seen: evicted %v, want %v", clock.Sub(now), got, step.want)
		}
	}
}

// As Kubernetes' taint eviction controller (deletePodHandler), the
// "Marking for deletion" event is recorded before the pod is marked and
// deleted, so also when that fails.
func TestEvictionEventRecordedWhenTheWriteFails(t *testing.T) {
	for _, verb := range []string{"patch", "delete"} {
		t.Run(verb, func(t *testing.T) {
			ctx := context.Background()
			ts := metav1.NewTime(now)
			n := node(corev1.ConditionFalse, time.Second, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute, TimeAdded: &ts})
			c, client := newFixture(t, n, healthy("n2", nil), pod("intolerant", nil))
			client.PrependReactor(verb, "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, fmt.Errorf("the server is busy")
			})
			if err := c.sync(ctx, "n1"); err == nil {
				t.Fatal("sync hid the failed eviction")
			}
			want := "Normal TaintManagerEviction Marking for deletion Pod ns/intolerant"
			if got := controllertest.Events(c.recorder.(*record.FakeRecorder).Events); !slices.Contains(got, want) {
				t.Errorf("events %q, want %q", got, want)
			}
		})
	}
}

// As Kubernetes' taint eviction controller (deletePodHandler), one eviction
// tries the marking and the deletion up to five times and records its
// "Marking for deletion" event once, before the first try. When all five
// fail, the later sync that tries again records no second event and no
// "Cancelling deletion" event: it is the same eviction. For a pod that does
// not tolerate the taint and for one whose toleration ran out.
func TestEvictionEventRecordedOncePerEviction(t *testing.T) {
	for _, tc := range []struct {
		name    string
		seconds *int64
	}{{"intolerant", nil}, {"waiting", ptr(60)}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ts := metav1.NewTime(now)
			n := node(corev1.ConditionFalse, time.Second, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute, TimeAdded: &ts})
			c, client := newFixture(t, n, healthy("n2", nil), pod(tc.name, tc.seconds))
			clock := now.Add(time.Duration(ptrOr(tc.seconds)) * time.Second)
			c.now = func() time.Time { return clock }
			if tc.seconds != nil {
				// Seen on the tainted node toleration seconds ago.
				c.scheduleEviction("n1", "ns/"+tc.name, types.UID("uid-"+tc.name), clock)
			}
			// The first attempt's five tries fail, and the next attempt's first.
			controllertest.RefuseFirst(client, "delete", "pods", 6, fmt.Errorf("the server is busy"))
			deletions := func() int { return len(controllertest.Filter(client.Actions(), "delete", "pods")) }
			recorder := c.recorder.(*record.FakeRecorder)
			var events []string
			if err := c.sync(ctx, "n1"); err == nil {
				t.Fatal("sync hid the failed eviction")
			}
			if got := deletions(); got != 5 {
				t.Errorf("%d deletions in the first attempt, want 5", got)
			}
			events = append(events, controllertest.Events(recorder.Events)...)
			clock = clock.Add(5 * time.Second)
			if err := c.sync(ctx, "n1"); err != nil {
				t.Fatal(err)
			}
			if got := deletions(); got != 7 {
				t.Errorf("%d deletions after the second attempt, want 7", got)
			}
			events = append(events, controllertest.Events(recorder.Events)...)
			want := []string{"Normal TaintManagerEviction Marking for deletion Pod ns/" + tc.name}
			var got []string
			for _, e := range events {
				if strings.Contains(e, "TaintManagerEviction") {
					got = append(got, e)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("events %q, want %q", got, want)
			}
		})
	}
}

// A pod whose eviction failed is judged afresh when its tolerations change,
// as Kubernetes' taint eviction controller, which drops failed work and
// judges the pod again on the change (handlePodUpdate): it now tolerates the
// taint for a minute, so it is deleted a minute later, not at once.
func TestFailedEvictionJudgedAgainWhenTolerationsChange(t *testing.T) {
	ctx := context.Background()
	p := pod("intolerant", nil)
	c, client, f := newFixtureWithInformers(t, notReadyNode(), healthy("n2", nil), p)
	clock := now
	c.now = func() time.Time { return clock }
	c.grace = time.Hour // the node stays not ready, its taint as it is
	controllertest.RefuseFirst(client, "delete", "pods", evictTries, fmt.Errorf("the server is busy"))
	deletions := func() int { return len(controllertest.Filter(client.Actions(), "delete", "pods")) }
	if err := c.sync(ctx, "n1"); err == nil {
		t.Fatal("sync hid the failed eviction")
	}
	retolerate(t, c, f, p, &clock, deletions, evictTries, evictTries, evictTries+1)
}

// A pod whose eviction fails does not hold up the others of its node: as
// Kubernetes' taint eviction controller evicts each pod on its own, every
// pod due is tried in the same sync, and the sync reports the failure.
func TestFailedEvictionHoldsUpNoOtherPod(t *testing.T) {
	ctx := context.Background()
	ts := metav1.NewTime(now)
	n := node(corev1.ConditionFalse, time.Second, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute, TimeAdded: &ts})
	objs := []runtime.Object{n, healthy("n2", nil)}
	for _, name := range []string{"a", "b", "c"} {
		p := pod(name, nil)
		p.Spec.Tolerations = nil
		objs = append(objs, p)
	}
	c, client := newFixture(t, objs...)
	client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, fmt.Errorf("the server is busy")
	})
	if err := c.sync(ctx, "n1"); err == nil {
		t.Fatal("sync hid the failed evictions")
	}
	if got, want := deletedPods(client), []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("deletion tried for %v, want %v", got, want)
	}
}

// A pod that cannot be marked not ready does not hold up its node's taint
// or the evictions it brings: kube-controller-manager taints the node
// (processTaintBaseEviction) before it marks the pods (MarkPodsNotReady),
// and its taint eviction controller evicts on its own. The sync still
// reports the failed marking, to be tried again.
func TestFailedPodMarkingHoldsUpNoTaintOrEviction(t *testing.T) {
	ctx := context.Background()
	c, client := newFixture(t, node(corev1.ConditionTrue, time.Hour), healthy("n2", nil), pod("intolerant", nil))
	c.health["n1"] = &nodeHealth{probe: now.Add(-time.Minute), heartbeat: metav1.NewTime(now.Add(-time.Hour))}
	client.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			return true, nil, fmt.Errorf("the server is busy")
		}
		return false, nil, nil
	})
	if err := c.sync(ctx, "n1"); err == nil {
		t.Fatal("sync hid the failed pod update")
	}
	n, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if !slices.Contains(taintList(n), corev1.TaintNodeUnreachable+":NoExecute") {
		t.Errorf("taints %v, want unreachable:NoExecute", taintList(n))
	}
	if got := deletedPods(client); !slices.Equal(got, []string{"intolerant"}) {
		t.Errorf("evicted %v, want [intolerant]", got)
	}
}

func ptrOr(v *int64) int64 {
	if v == nil {
		return 0
	}
	return *v
}

// As Kubernetes' MarkPodsNotReady, the pod's NodeNotReady warning is
// recorded once its update was tried, also when the update failed (not when
// the pod is gone).
func TestNodeNotReadyPodEventRecordedWhenTheUpdateFails(t *testing.T) {
	ctx := context.Background()
	c, client := newFixture(t, node(corev1.ConditionTrue, time.Hour), healthy("n2", nil), pod("a", nil), pod("gone", nil))
	c.health["n1"] = &nodeHealth{probe: now.Add(-time.Minute), heartbeat: metav1.NewTime(now.Add(-time.Hour))}
	client.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		u := a.(k8stesting.UpdateAction)
		if u.GetSubresource() != "status" {
			return false, nil, nil
		}
		if name := u.GetObject().(*corev1.Pod).Name; name == "gone" {
			return true, nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
		}
		return true, nil, fmt.Errorf("the server is busy")
	})
	if err := c.sync(ctx, "n1"); err == nil {
		t.Fatal("sync hid the failed pod update")
	}
	var warnings int
	for _, e := range controllertest.Events(c.recorder.(*record.FakeRecorder).Events) {
		if e == "Warning NodeNotReady Node is not ready" {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("%d NodeNotReady pod warnings, want 1: for the pod whose update failed, none for the pod gone", warnings)
	}
}

// As Kubernetes' monitorNodeHealth, the NodeNotReady node event reports the controller taking a
// Ready node out of Ready, once: not a node whose agent had already reported Ready False, nor
// one that never reported, though both are marked Unknown too.
func TestNodeNotReadyEventOnlyForAReadyNode(t *testing.T) {
	ctx := context.Background()
	const notReadyEvent = "Normal NodeNotReady Node n1 status is now: NodeNotReady"
	neverReported := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
	for _, tc := range []struct {
		name       string
		node       *corev1.Node
		wantEvents int
	}{
		{"ready, then silent", node(corev1.ConditionTrue, time.Hour), 1},
		{"reported not ready, then silent", node(corev1.ConditionFalse, time.Hour), 0},
		{"never reported", neverReported, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, client, f := newFixtureWithInformers(t, tc.node, healthy("n2", nil))
			// Last heard from an hour ago: the heartbeat known is the node's own, unchanged since.
			h := &nodeHealth{probe: now.Add(-time.Hour)}
			if r := readyCondition(tc.node); r != nil {
				h.heartbeat = r.LastHeartbeatTime
			}
			c.health["n1"] = h
			for range 2 {
				if err := c.sync(ctx, "n1"); err != nil {
					t.Fatal(err)
				}
				got, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
				if r := readyCondition(got); r == nil || r.Status != corev1.ConditionUnknown {
					t.Fatalf("Ready = %+v, want Unknown", r)
				}
				update(t, f.Core().V1().Nodes().Informer(), got) // the informer sees the write
			}
			n := 0
			for _, e := range controllertest.Events(c.recorder.(*record.FakeRecorder).Events) {
				if e == notReadyEvent {
					n++
				}
			}
			if n != tc.wantEvents {
				t.Errorf("%d NodeNotReady node events, want %d", n, tc.wantEvents)
			}
		})
	}
}

// As Kubernetes' monitorNodeHealth, the node's pods are marked not ready only
// when the controller takes a Ready node out of Ready: a node whose agent had
// already reported Ready False, then went silent, keeps its pods' Ready
// conditions as the agent left them (kube marks them only on a True to not
// True transition it made itself).
func TestPodsMarkedNotReadyOnlyWhenReadyGoes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		node      *corev1.Node
		wantReady corev1.ConditionStatus
	}{
		{"ready, then silent", node(corev1.ConditionTrue, time.Hour), corev1.ConditionFalse},
		{"reported not ready, then silent", node(corev1.ConditionFalse, time.Hour), corev1.ConditionTrue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, client, f := newFixtureWithInformers(t, tc.node, healthy("n2", nil), pod("a", nil))
			c.health["n1"] = &nodeHealth{probe: now.Add(-time.Hour), heartbeat: readyCondition(tc.node).LastHeartbeatTime}
			for range 2 {
				if err := c.sync(ctx, "n1"); err != nil {
					t.Fatal(err)
				}
				got, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
				if r := readyCondition(got); r.Status != corev1.ConditionUnknown {
					t.Fatalf("Ready = %s, want Unknown", r.Status)
				}
				update(t, f.Core().V1().Nodes().Informer(), got)
			}
			p, _ := client.CoreV1().Pods("ns").Get(ctx, "a", metav1.GetOptions{})
			if r := p.Status.Conditions[0]; r.Status != tc.wantReady {
				t.Errorf("pod Ready = %s, want %s", r.Status, tc.wantReady)
			}
		})
	}
}

// A zone's pace of NoExecute taints carries over when its state changes, as
// kube-controller-manager swaps its limiter (RateLimitedTimedQueue.SwapLimiter):
// kept as it is when the rate stays the same (a zone going from Normal to
// FullDisruption, both at the normal rate), and started empty when the old
// one had no token left or allowed none (a small zone leaving partial
// disruption). A zone changing state does not get a taint for free.
func TestZonePaceKeptAcrossStateChanges(t *testing.T) {
	a, b := map[string]string{corev1.LabelTopologyZone: "a"}, map[string]string{corev1.LabelTopologyZone: "b"}
	tainted := func(t *testing.T, client *fake.Clientset, name string) bool {
		t.Helper()
		got, _ := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		return slices.Contains(taintList(got), corev1.TaintNodeNotReady+":NoExecute")
	}
	t.Run("same rate: the token used stays used", func(t *testing.T) {
		ctx := context.Background()
		n3 := healthy("n3", a)
		c, client, f := newFixtureWithInformers(t, notReady("n1", a), notReady("n2", a), n3, healthy("ok", b))
		if err := c.sync(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if !tainted(t, client, "n1") {
			t.Fatal("n1 not tainted NoExecute")
		}
		// The zone's last Ready node goes: zone a is fully disrupted, zone b is not.
		update(t, f.Core().V1().Nodes().Informer(), notReady("n3", a))
		nodes, _ := c.nodeLister.List(labels.Everything())
		c.updateDisruption(nodes, now)
		if got := c.disruption.zones["/a"]; got != zoneFull {
			t.Fatalf("zone a %s, want FullDisruption", got)
		}
		if err := c.sync(ctx, "n2"); err != nil {
			t.Fatal(err)
		}
		if tainted(t, client, "n2") {
			t.Error("n2 tainted NoExecute at once after n1: the zone's pace was reset by its change of state")
		}
	})
	t.Run("from no rate: the new pace starts empty", func(t *testing.T) {
		ctx := context.Background()
		c, client, f := newFixtureWithInformers(t, notReady("n1", a), notReady("n2", a), notReady("n3", a), healthy("n4", a), healthy("ok", b))
		if err := c.sync(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if tainted(t, client, "n1") {
			t.Fatal("n1 tainted NoExecute in a small, partly disrupted zone")
		}
		update(t, f.Core().V1().Nodes().Informer(), healthy("n2", a))
		nodes, _ := c.nodeLister.List(labels.Everything())
		c.updateDisruption(nodes, now)
		if got := c.disruption.zones["/a"]; got != zoneNormal {
			t.Fatalf("zone a %s, want Normal", got)
		}
		if err := c.sync(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if tainted(t, client, "n1") {
			t.Error("n1 tainted NoExecute as soon as its zone left partial disruption, want the first taint a period later")
		}
	})
}

// As kube-controller-manager's reconcileNodeLabels, a node's deprecated
// beta.kubernetes.io/os and beta.kubernetes.io/arch labels follow
// kubernetes.io/os and kubernetes.io/arch: added when missing, corrected when
// different, so that old nodeSelectors (many charts still select
// beta.kubernetes.io/os: linux) match. Nothing is added without the stable
// label.
func TestBetaOSArchLabelsReconciled(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   map[string]string
	}{
		{"added", map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: "arm64"},
			map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: "arm64", labelOSBeta: "linux", labelArchBeta: "arm64"}},
		{"corrected", map[string]string{corev1.LabelOSStable: "linux", labelOSBeta: "windows", "team": "a"},
			map[string]string{corev1.LabelOSStable: "linux", labelOSBeta: "linux", "team": "a"}},
		{"no stable label", map[string]string{labelArchBeta: "amd64"}, map[string]string{labelArchBeta: "amd64"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := node(corev1.ConditionTrue, time.Second)
			n.Labels = tc.labels
			c, client := newFixture(t, n)
			if err := c.sync(context.Background(), "n1"); err != nil {
				t.Fatal(err)
			}
			got, _ := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
			if !maps.Equal(got.Labels, tc.want) {
				t.Errorf("labels %v, want %v", got.Labels, tc.want)
			}
		})
	}
}

// Nodes are grouped by zone as kube-controller-manager groups them
// (topology.GetZoneKey): the deprecated failure-domain.beta.kubernetes.io
// label wins when present, even empty, the topology.kubernetes.io one is
// used otherwise. A node whose labels disagree is counted in the zone kube
// counts it in.
func TestZoneOf(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{
		{nil, ""},
		{map[string]string{corev1.LabelTopologyRegion: "r", corev1.LabelTopologyZone: "z"}, "r/z"},
		{map[string]string{corev1.LabelFailureDomainBetaRegion: "r", corev1.LabelFailureDomainBetaZone: "z"}, "r/z"},
		{map[string]string{corev1.LabelTopologyZone: "new", corev1.LabelFailureDomainBetaZone: "old"}, "/old"},
		{map[string]string{corev1.LabelTopologyRegion: "new", corev1.LabelFailureDomainBetaRegion: "", corev1.LabelTopologyZone: "z"}, "/z"},
	} {
		if got := zoneOf(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}}); got != tc.want {
			t.Errorf("zoneOf(%v) = %q, want %q", tc.labels, got, tc.want)
		}
	}
}

// As Kubernetes' taint manager (addConditionAndDeletePod, UpdatePodCondition),
// a DisruptionTarget condition the pod has already is rewritten to say the
// taint manager deletes it, keeping its lastTransitionTime when it was True;
// one that says so already is not written again.
func TestDisruptionTargetRewrittenBeforeTaintEviction(t *testing.T) {
	ctx := context.Background()
	before := metav1.NewTime(now.Add(-time.Hour).Truncate(time.Second))
	for _, tc := range []struct {
		name      string
		cond      corev1.PodCondition
		wantPatch bool
	}{
		{"evicted by the kubelet", corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "TerminationByKubelet", Message: "The node was low on resource: memory.", LastTransitionTime: before}, true},
		{"marked by the taint manager already", corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "DeletionByTaintManager", Message: "Taint manager: deleting due to NoExecute taint", LastTransitionTime: before}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := node(corev1.ConditionUnknown, 10*time.Minute, unreachable(time.Minute))
			p := pod("intolerant", nil)
			p.Status.Phase = corev1.PodFailed
			p.Status.Conditions = append(p.Status.Conditions, tc.cond)
			c, client := newFixture(t, n, healthy("n2", nil), lease(10*time.Minute), p)
			if err := c.sync(ctx, "n1"); err != nil {
				t.Fatal(err)
			}
			if got := deletedPods(client); !slices.Equal(got, []string{"intolerant"}) {
				t.Fatalf("evicted %v, want the intolerant pod", got)
			}
			var patches []string
			for _, a := range controllertest.Filter(client.Actions(), "patch", "pods") {
				if pa := a.(k8stesting.PatchAction); pa.GetSubresource() == "status" {
					patches = append(patches, string(pa.GetPatch()))
				}
			}
			if !tc.wantPatch {
				if len(patches) != 0 {
					t.Errorf("status written %q, want nothing: the condition says so already", patches)
				}
				return
			}
			stamp, _ := before.MarshalJSON()
			if len(patches) != 1 || !strings.Contains(patches[0], `"reason":"DeletionByTaintManager"`) ||
				!strings.Contains(patches[0], `"lastTransitionTime":`+string(stamp)) {
				t.Errorf("status patches %q, want one rewriting DisruptionTarget to DeletionByTaintManager since %s", patches, stamp)
			}
		})
	}
}

// As kube-controller-manager's processPod, a pod arriving on a node (added,
// as every pod is when the controller starts, or bound) is marked not ready
// when the node's Ready condition is there and not True, whoever made it so:
// a pod left Ready on a node already down (the last leader stopped before
// marking it) leaves the Services' endpoints. A pod on a Ready node, or on
// one that never reported, is left as it is.
func TestArrivingPodMarkedNotReadyOnANodeNotReady(t *testing.T) {
	ctx := context.Background()
	neverReported := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(now.Add(-time.Second))}}
	for _, tc := range []struct {
		name      string
		node      *corev1.Node
		wantReady corev1.ConditionStatus
	}{
		{"node unreachable", node(corev1.ConditionUnknown, time.Hour), corev1.ConditionFalse},
		{"agent reports not ready", node(corev1.ConditionFalse, time.Second), corev1.ConditionFalse},
		{"node ready", node(corev1.ConditionTrue, time.Second), corev1.ConditionTrue},
		{"node never reported", neverReported, corev1.ConditionTrue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, client := startedFixture(t, tc.node, healthy("n2", nil), pod("forever", nil))
			if err := c.sync(ctx, "n1"); err != nil {
				t.Fatal(err)
			}
			got, _ := client.CoreV1().Pods("ns").Get(ctx, "forever", metav1.GetOptions{})
			if r := got.Status.Conditions[0]; r.Status != tc.wantReady {
				t.Errorf("pod Ready = %s, want %s", r.Status, tc.wantReady)
			}
			events := controllertest.Events(c.recorder.(*record.FakeRecorder).Events)
			if want := "Warning NodeNotReady Node is not ready"; slices.Contains(events, want) != (tc.wantReady == corev1.ConditionFalse) {
				t.Errorf("events %q: want %q only for a pod marked", events, want)
			}
		})
	}
}

// startedFixture is a controller whose informers list objs, as when it
// starts: their event handlers see every object added.
func startedFixture(t *testing.T, objs ...runtime.Object) (*Controller, *fake.Clientset) {
	t.Helper()
	client := controllertest.NewClient(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	c := newController(t, client, f)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); f.Shutdown() })
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		t.Fatal("caches not synced")
	}
	controllertest.WaitForWatches(t, client, "nodes", "pods")
	client.ClearActions()
	return c, client
}

// A pod that arrived on a node not Ready and whose update failed is marked
// on the next sync; one that did not arrive is not (the node's own
// transition is what marks every pod).
func TestArrivingPodMarkedNotReadyRetried(t *testing.T) {
	ctx := context.Background()
	c, client := startedFixture(t, node(corev1.ConditionUnknown, time.Hour), healthy("n2", nil), pod("a", nil))
	failed := false
	client.PrependReactor("update", "pods", func(act k8stesting.Action) (bool, runtime.Object, error) {
		if u := act.(k8stesting.UpdateAction); u.GetSubresource() == "status" && !failed {
			failed = true
			return true, nil, fmt.Errorf("the server is busy")
		}
		return false, nil, nil
	})
	if err := c.sync(ctx, "n1"); err == nil {
		t.Fatal("sync hid the failed pod update")
	}
	// b was there all along, as a arrived: it is not seen arriving now.
	b := pod("b", nil)
	if err := c.podIndexer.Add(b); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("ns").Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want corev1.ConditionStatus
	}{{"a", corev1.ConditionFalse}, {"b", corev1.ConditionTrue}} {
		got, _ := client.CoreV1().Pods("ns").Get(ctx, tc.name, metav1.GetOptions{})
		if r := got.Status.Conditions[0]; r.Status != tc.want {
			t.Errorf("pod %s Ready = %s, want %s", tc.name, r.Status, tc.want)
		}
	}
}

// A pod bound to a node not Ready after the controller started is marked
// not ready too (kube's podUpdated queues a pod whose nodeName changed).
func TestBoundPodMarkedNotReady(t *testing.T) {
	ctx := context.Background()
	unbound := pod("late", nil)
	unbound.Spec.NodeName = ""
	c, client := startedFixture(t, node(corev1.ConditionUnknown, time.Hour), healthy("n2", nil), unbound)
	bound := unbound.DeepCopy()
	bound.Spec.NodeName = "n1"
	if _, err := client.CoreV1().Pods("ns").Update(ctx, bound, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := c.sync(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		got, _ := client.CoreV1().Pods("ns").Get(ctx, "late", metav1.GetOptions{})
		if got.Status.Conditions[0].Status == corev1.ConditionFalse {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the pod bound to the unreachable node is still Ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// As Kubernetes' taint manager, a pod terminating already (deleted by a user,
// say, before its node went down) is evicted as any other: marked
// DisruptionTarget, so a Job's podFailurePolicy tells its end from a
// failure, its deletion sent, with the event; once, not at each sync. One
// that tolerates the taint for a while is evicted when that runs out.
func TestTerminatingPodsEvicted(t *testing.T) {
	ctx := context.Background()
	n := node(corev1.ConditionUnknown, 10*time.Minute, unreachable(time.Minute))
	gone := metav1.NewTime(now.Add(-time.Minute))
	intolerant, waiting := pod("intolerant", nil), pod("waiting", ptr(60))
	for _, p := range []*corev1.Pod{intolerant, waiting} {
		p.DeletionTimestamp, p.Finalizers = &gone, []string{"example.com/keep"}
	}
	c, client := newFixture(t, n, healthy("n2", nil), lease(10*time.Minute), intolerant, waiting)
	clock := now
	c.now = func() time.Time { return clock }
	deletes := func() map[string]int {
		m := map[string]int{}
		for _, a := range controllertest.Filter(client.Actions(), "delete", "pods") {
			m[a.(k8stesting.DeleteAction).GetName()]++
		}
		return m
	}
	for _, step := range []struct {
		after time.Duration
		want  map[string]int
	}{
		{0, map[string]int{"intolerant": 1}},
		{5 * time.Second, map[string]int{"intolerant": 1}},
		{time.Minute, map[string]int{"intolerant": 1, "waiting": 1}},
		{5 * time.Second, map[string]int{"intolerant": 1, "waiting": 1}},
	} {
		clock = clock.Add(step.after)
		if err := c.sync(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if got := deletes(); !maps.Equal(got, step.want) {
			t.Fatalf("%s after the first sync: deletions %v, want %v", clock.Sub(now), got, step.want)
		}
	}
	var marked []string
	for _, a := range controllertest.Filter(client.Actions(), "patch", "pods") {
		if p := a.(k8stesting.PatchAction); p.GetSubresource() == "status" && strings.Contains(string(p.GetPatch()), `"reason":"DeletionByTaintManager"`) {
			marked = append(marked, p.GetName())
		}
	}
	if slices.Sort(marked); !slices.Equal(marked, []string{"intolerant", "waiting"}) {
		t.Errorf("marked DisruptionTarget %v, want both pods", marked)
	}
	events := controllertest.Events(c.recorder.(*record.FakeRecorder).Events)
	for _, name := range []string{"intolerant", "waiting"} {
		if want := "Normal TaintManagerEviction Marking for deletion Pod ns/" + name; !slices.Contains(events, want) {
			t.Errorf("events %q, want %q", events, want)
		}
	}
}

// As Kubernetes' taint manager keeps its timers when a node is deleted, a
// deletion scheduled on a node that goes is still carried out when due (the
// pod garbage collector may not have removed the pod by then); one of a pod
// gone meanwhile is dropped, and nothing is kept once all are done.
func TestScheduledEvictionsOutliveTheirNode(t *testing.T) {
	ctx := context.Background()
	n := node(corev1.ConditionUnknown, 10*time.Minute, unreachable(time.Minute))
	c, client, f := newFixtureWithInformers(t, n, healthy("n2", nil), lease(10*time.Minute), pod("waiting", ptr(60)), pod("later", ptr(120)), pod("gone", ptr(60)))
	clock := now
	c.now = func() time.Time { return clock }
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	pods := f.Core().V1().Pods().Informer().GetIndexer()
	gone, _, _ := pods.GetByKey("ns/gone")
	if err := pods.Delete(gone); err != nil {
		t.Fatal(err)
	}
	if err := f.Core().V1().Nodes().Informer().GetIndexer().Delete(n); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		after time.Duration
		want  []string
	}{
		{30 * time.Second, nil},
		{30 * time.Second, []string{"waiting"}},
		{60 * time.Second, []string{"later", "waiting"}},
	} {
		clock = clock.Add(step.after)
		if err := c.sync(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if got := deletedPods(client); !slices.Equal(got, step.want) {
			t.Fatalf("%s after the first sync, the node deleted: evicted %v, want %v", clock.Sub(now), got, step.want)
		}
	}
	events := controllertest.Events(c.recorder.(*record.FakeRecorder).Events)
	if want := "Normal TaintManagerEviction Marking for deletion Pod ns/waiting"; !slices.Contains(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
	c.evictMu.Lock()
	defer c.evictMu.Unlock()
	if len(c.evictions) != 0 || len(c.evicted) != 0 {
		t.Errorf("kept %v scheduled, %v evicted, want nothing", c.evictions, c.evicted)
	}
}

// retolerate gives p a minute's toleration of the not-ready taint and syncs
// node n1 at once, 59 s later, a second later and (for a fourth count) a
// minute later, checking deletions against want at each step.
func retolerate(t *testing.T, c *Controller, f informers.SharedInformerFactory, p *corev1.Pod, clock *time.Time, deletions func() int, want ...int) {
	t.Helper()
	ctx := context.Background()
	tolerant := p.DeepCopy()
	tolerant.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(60)}}
	update(t, f.Core().V1().Pods().Informer(), tolerant)
	c.podUpdated(p, tolerant)
	for i, after := range []time.Duration{0, 59 * time.Second, time.Second, time.Minute}[:len(want)] {
		*clock = clock.Add(after)
		if err := c.sync(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if got := deletions(); got != want[i] {
			t.Fatalf("%s after the tolerations changed: %d deletions, want %d", clock.Sub(now), got, want[i])
		}
	}
}

// A node without a Ready condition (registered, its agent not reporting
// yet, or one whose condition was taken away) keeps the NoExecute taints it
// has, as kube-controller-manager's monitorNodeHealth leaves the taints of a
// node whose Ready condition is nil alone (it takes them off only when the
// node is Ready, or when every node is down: master disruption mode).
func TestNoExecuteTaintKeptWithoutReadyCondition(t *testing.T) {
	notReadyTaint := unreachable(time.Minute)
	notReadyTaint.Key = corev1.TaintNodeNotReady
	tests := []struct {
		name   string
		taint  corev1.Taint
		others []runtime.Object
		want   []string
	}{
		{"unreachable kept", unreachable(time.Minute), []runtime.Object{healthy("n2", nil)}, []string{corev1.TaintNodeUnreachable + ":NoExecute"}},
		{"not-ready kept", notReadyTaint, []runtime.Object{healthy("n2", nil)}, []string{corev1.TaintNodeNotReady + ":NoExecute"}},
		{"lifted when no node is Ready", unreachable(time.Minute), nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Within its startup grace period: not marked Unknown by this sync.
			n := &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(now.Add(-30 * time.Second))},
				Spec:       corev1.NodeSpec{Taints: []corev1.Taint{tc.taint}},
			}
			c, client := newFixture(t, append(tc.others, n)...)
			if err := c.sync(context.Background(), "n1"); err != nil {
				t.Fatal(err)
			}
			got, _ := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
			if r := readyCondition(got); r != nil {
				t.Fatalf("Ready = %+v, want none within the startup grace period", r)
			}
			if taints := taintList(got); !slices.Equal(taints, tc.want) {
				t.Errorf("taints = %v, want %v", taints, tc.want)
			}
		})
	}
}

// The "Marking for deletion" events of a pod whose evictions fail are those
// Kubernetes' taint eviction controller records: one per attempt it makes,
// and it makes one when the pod is seen on the tainted node and again on
// each change of the node's NoExecute taints (handleNodeUpdate) or of the
// pod's tolerations, never in between (its failed work is dropped). The
// syncs in between try again, which Kubernetes does not, and record
// nothing.
func TestFailedEvictionEventsOnlyOnAChange(t *testing.T) {
	ctx := context.Background()
	n := notReadyNode()
	c, client, f := newFixtureWithInformers(t, n, healthy("n2", nil), pod("intolerant", nil))
	clock := now
	c.now = func() time.Time { return clock }
	c.grace = time.Hour // the node's condition stays as the test sets it
	controllertest.RefuseFirst(client, "delete", "pods", 4*evictTries, fmt.Errorf("the server is busy"))
	recorder := c.recorder.(*record.FakeRecorder)
	var marked int
	sync := func(what string, wantMarked int) {
		t.Helper()
		clock = clock.Add(5 * time.Second)
		if err := c.sync(ctx, "n1"); err == nil {
			t.Fatalf("%s: sync hid the failed eviction", what)
		}
		for _, e := range controllertest.Events(recorder.Events) {
			if strings.Contains(e, "Marking for deletion Pod ns/intolerant") {
				marked++
			}
		}
		if marked != wantMarked {
			t.Fatalf("%s: %d Marking for deletion events, want %d", what, marked, wantMarked)
		}
	}
	sync("first seen", 1)
	sync("tried again", 1)
	sync("tried again", 1)
	// The agent's Ready goes Unknown and the taint is swapped for unreachable.
	unknown := n.DeepCopy()
	unknown.Status.Conditions[0].Status = corev1.ConditionUnknown
	unknown.Spec.Taints = []corev1.Taint{unreachable(0), {Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}}
	update(t, f.Core().V1().Nodes().Informer(), unknown)
	c.nodeUpdated(n, unknown)
	sync("the taints changed", 2)
}
