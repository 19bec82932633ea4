package podgc

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
)

var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	client *fake.Clientset
	c      *Controller
	now    time.Time
}

// newFixture loads cached objects into the informers; live objects exist only in the API.
func newFixture(t *testing.T, threshold int, cached []runtime.Object, live ...runtime.Object) *fixture {
	t.Helper()
	client := controllertest.NewClient(append(append([]runtime.Object{}, cached...), live...)...)
	f := informers.NewSharedInformerFactory(client, 0)
	fx := &fixture{client: client, now: base}
	c, err := New(client, f.Core().V1().Pods(), f.Core().V1().Nodes(), record.NewFakeRecorder(100),
		Options{Threshold: threshold, Now: func() time.Time { return fx.now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range cached {
		switch o.(type) {
		case *corev1.Pod:
			controllertest.Load(t, f.Core().V1().Pods().Informer(), o)
		case *corev1.Node:
			controllertest.Load(t, f.Core().V1().Nodes().Informer(), o)
		}
	}
	client.ClearActions()
	fx.c = c
	return fx
}

// deleted lists deleted pods as name or name! when forced (grace 0).
func (fx *fixture) deleted() []string {
	var out []string
	for _, a := range controllertest.Filter(fx.client.Actions(), "delete", "pods") {
		d := a.(k8stesting.DeleteActionImpl)
		name := d.GetName()
		if g := d.DeleteOptions.GracePeriodSeconds; g != nil && *g == 0 {
			name += "!"
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// statusApplies lists the pods/status applies as name: body.
func (fx *fixture) statusApplies() []string {
	var out []string
	for _, a := range controllertest.Filter(fx.client.Actions(), "patch", "pods") {
		if p := a.(k8stesting.PatchActionImpl); p.GetSubresource() == "status" && p.GetPatchType() == types.ApplyPatchType {
			out = append(out, p.GetName()+": "+string(p.GetPatch()))
		}
	}
	sort.Strings(out)
	return out
}

func pod(name, node string, phase corev1.PodPhase, age time.Duration) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(base.Add(-age))},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func node(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }

func TestTerminatedPodsBeyondThresholdOldestFirst(t *testing.T) {
	fx := newFixture(t, 2, []runtime.Object{node("n1"),
		pod("old", "n1", corev1.PodSucceeded, 4*time.Hour), pod("older", "n1", corev1.PodFailed, 5*time.Hour),
		pod("new", "n1", corev1.PodSucceeded, time.Hour), pod("newer", "n1", corev1.PodFailed, time.Minute),
		pod("running", "n1", corev1.PodRunning, 9*time.Hour)})
	fx.c.sweep(context.Background())
	if got := fx.deleted(); !slices.Equal(got, []string{"old", "older"}) {
		t.Fatalf("deleted %v", got)
	}
}

// As Kubernetes': terminated pods already being deleted (held by a finalizer, say) count towards
// the threshold and take their place in the order, but are not deleted again.
func TestTerminatedPodsBeingDeletedCountButAreNotDeletedAgain(t *testing.T) {
	held := func(name string, age time.Duration) *corev1.Pod {
		p := pod(name, "n1", corev1.PodSucceeded, age)
		ts := metav1.NewTime(base.Add(-time.Minute))
		p.DeletionTimestamp, p.Finalizers = &ts, []string{"example.com/keep"}
		return p
	}
	fx := newFixture(t, 2, []runtime.Object{node("n1"),
		held("held-oldest", 9*time.Hour), pod("old", "n1", corev1.PodFailed, 5*time.Hour),
		pod("new", "n1", corev1.PodSucceeded, time.Hour), held("held-newest", time.Minute)})
	fx.c.sweep(context.Background())
	// Four terminated, two over the threshold: the oldest two, of which one is already going.
	if got := fx.deleted(); !slices.Equal(got, []string{"old"}) {
		t.Fatalf("deleted %v, want only old", got)
	}
}

// Evicted pods are collected before older ones, as in Kubernetes.
func TestEvictedTerminatedPodsGoFirst(t *testing.T) {
	evicted := pod("evicted", "n1", corev1.PodFailed, time.Minute)
	evicted.Status.Reason = "Evicted"
	fx := newFixture(t, 1, []runtime.Object{node("n1"), evicted,
		pod("oldest", "n1", corev1.PodSucceeded, 5*time.Hour), pod("older", "n1", corev1.PodFailed, 4*time.Hour)})
	fx.c.sweep(context.Background())
	if got := fx.deleted(); !slices.Equal(got, []string{"evicted", "oldest"}) {
		t.Fatalf("deleted %v, want the evicted pod and then the oldest", got)
	}
}

func TestPodsOfGoneNodesAfterQuarantine(t *testing.T) {
	fx := newFixture(t, -1,
		[]runtime.Object{node("n1"), pod("alive", "n1", corev1.PodRunning, time.Hour),
			pod("stranded", "gone", corev1.PodRunning, time.Hour), pod("late", "registering", corev1.PodRunning, time.Hour)},
		node("registering")) // in the API, not yet in the cache
	fx.c.sweep(context.Background())
	if got := fx.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v before the quarantine ended", got)
	}
	fx.now = base.Add(DefaultQuarantine + time.Second)
	fx.c.sweep(context.Background())
	if got := fx.deleted(); !slices.Equal(got, []string{"stranded!"}) {
		t.Fatalf("deleted %v, want only the pod of the gone node, forced", got)
	}
	// As Kubernetes' PodGC: Failed, with DisruptionTarget, before it goes.
	applies := fx.statusApplies()
	if len(applies) != 1 || !strings.HasPrefix(applies[0], "stranded: ") {
		t.Fatalf("status applies %q, want one for stranded", applies)
	}
	for _, want := range []string{`"phase":"Failed"`, `"type":"DisruptionTarget"`, `"reason":"DeletionByPodGC"`, `"message":"PodGC: node no longer exists"`} {
		if !strings.Contains(applies[0], want) {
			t.Errorf("status apply %s lacks %s", applies[0], want)
		}
	}
}

// A finished pod of a gone node is deleted as it is.
func TestFinishedPodOfAGoneNodeIsNotMarked(t *testing.T) {
	fx := newFixture(t, -1, []runtime.Object{pod("done", "gone", corev1.PodSucceeded, time.Hour)})
	fx.c.sweep(context.Background())
	fx.now = base.Add(DefaultQuarantine + time.Second)
	fx.c.sweep(context.Background())
	if got, applies := fx.deleted(), fx.statusApplies(); !slices.Equal(got, []string{"done!"}) || len(applies) != 0 {
		t.Fatalf("deleted %v, status applies %q; want done deleted unmarked", got, applies)
	}
}

// As Kubernetes': pods being deleted that were never scheduled are marked
// Failed and forced out; one held by a finalizer too (its owner may wait for
// Failed), but only until it is Failed.
func TestUnscheduledTerminatingPodsAreForced(t *testing.T) {
	ts := metav1.NewTime(base)
	terminating := func(name string, phase corev1.PodPhase, finalizers ...string) *corev1.Pod {
		p := pod(name, "", phase, time.Hour)
		p.DeletionTimestamp = &ts
		p.Finalizers = finalizers
		return p
	}
	fx := newFixture(t, -1, []runtime.Object{
		terminating("stuck", corev1.PodPending),
		terminating("held", corev1.PodPending, "batch.kubernetes.io/job-tracking"),
		terminating("held-failed", corev1.PodFailed, "batch.kubernetes.io/job-tracking"),
	})
	fx.c.sweep(context.Background())
	if got := fx.deleted(); !slices.Equal(got, []string{"held!", "stuck!"}) {
		t.Fatalf("deleted %v, want held and stuck, forced", got)
	}
	applies := fx.statusApplies()
	if len(applies) != 2 {
		t.Fatalf("status applies %q, want held and stuck marked Failed", applies)
	}
	for i, name := range []string{"held", "stuck"} {
		if !strings.HasPrefix(applies[i], name+": ") || !strings.Contains(applies[i], `"phase":"Failed"`) || strings.Contains(applies[i], "DisruptionTarget") {
			t.Errorf("status apply %q, want %s marked Failed without a condition", applies[i], name)
		}
	}
}

// Terminated pods created in the same second are collected in name order, as
// Kubernetes' byEvictionAndCreationTimestamp.
func TestTerminatedPodsOfTheSameSecondGoByName(t *testing.T) {
	objs := []runtime.Object{node("n1")}
	for _, name := range []string{"pod-d", "pod-b", "pod-e", "pod-a", "pod-c"} {
		objs = append(objs, pod(name, "n1", corev1.PodSucceeded, time.Hour))
	}
	fx := newFixture(t, 3, objs)
	fx.c.sweep(context.Background())
	if got := fx.deleted(); !slices.Equal(got, []string{"pod-a", "pod-b"}) {
		t.Fatalf("deleted %v, want pod-a and pod-b", got)
	}
}

// Non-graceful node shutdown: terminating pods of a NotReady node tainted
// out-of-service are forced out, Failed first; not while the node is Ready,
// nor on a NotReady node without the taint, nor pods not terminating.
func TestTerminatingPodsOfOutOfServiceNodesAreForced(t *testing.T) {
	down := func(name string, ready corev1.ConditionStatus, taints ...corev1.Taint) *corev1.Node {
		n := node(name)
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}
		n.Spec.Taints = taints
		return n
	}
	oos := corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}
	terminating := func(name, node string) *corev1.Pod {
		p := pod(name, node, corev1.PodRunning, time.Hour)
		ts := metav1.NewTime(base)
		p.DeletionTimestamp = &ts
		return p
	}
	fx := newFixture(t, -1, []runtime.Object{
		down("dead", corev1.ConditionUnknown, oos), down("alive", corev1.ConditionTrue, oos), down("unsure", corev1.ConditionFalse),
		terminating("stuck", "dead"), pod("running", "dead", corev1.PodRunning, time.Hour),
		terminating("fine", "alive"), terminating("waiting", "unsure"),
	})
	fx.c.sweep(context.Background())
	if got := fx.deleted(); !slices.Equal(got, []string{"stuck!"}) {
		t.Fatalf("deleted %v, want only stuck, forced", got)
	}
	if applies := fx.statusApplies(); len(applies) != 1 || !strings.Contains(applies[0], `"phase":"Failed"`) {
		t.Errorf("status applies %q, want stuck marked Failed", applies)
	}
}

// Kubernetes' pod_gc_collector metrics: every deletion tried, by namespace
// and reason, and the failed ones.
func TestForceDeleteMetrics(t *testing.T) {
	inNS := func(p *corev1.Pod) *corev1.Pod { p.Namespace = "metrics-test"; return p }
	ts := metav1.NewTime(base)
	unscheduled := inNS(pod("unscheduled", "", corev1.PodPending, time.Hour))
	unscheduled.DeletionTimestamp = &ts
	refused := inNS(pod("refused", "", corev1.PodPending, time.Hour))
	refused.DeletionTimestamp = &ts
	fx := newFixture(t, 1, []runtime.Object{node("n1"),
		inNS(pod("old", "n1", corev1.PodSucceeded, 2*time.Hour)), inNS(pod("new", "n1", corev1.PodSucceeded, time.Hour)),
		unscheduled, refused})
	fx.client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.DeleteAction).GetName() == "refused" {
			return true, nil, apierrors.NewInternalError(errors.New("refused"))
		}
		return false, nil, nil
	})
	count := func(v *prometheus.CounterVec, reason string) float64 {
		var m dto.Metric
		if err := v.WithLabelValues("metrics-test", reason).Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetCounter().GetValue()
	}
	cases := []struct {
		v      *prometheus.CounterVec
		reason string
		want   float64
	}{
		{forceDeletes, "terminated", 1}, {forceDeletes, "unscheduled", 2}, {forceDeletes, "orphaned", 0},
		{forceDeleteErrors, "terminated", 0}, {forceDeleteErrors, "unscheduled", 1},
	}
	// The counters are process-wide: compare what this sweep added (go test -count=2).
	before := make([]float64, len(cases))
	for i, tc := range cases {
		before[i] = count(tc.v, tc.reason)
	}
	fx.c.sweep(context.Background())
	for i, tc := range cases {
		if got := count(tc.v, tc.reason) - before[i]; got != tc.want {
			t.Errorf("%s{reason=%q} = %v, want %v", map[*prometheus.CounterVec]string{forceDeletes: "force_delete_pods_total", forceDeleteErrors: "force_delete_pod_errors_total"}[tc.v], tc.reason, got, tc.want)
		}
	}
}
