package disruption

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	client *fake.Clientset
	c      *Controller
	rec    *record.FakeRecorder
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	return newFixtureWith(t, controllertest.NewClient(objs...), Options{}, objs...)
}

// newFixtureWith builds the controller over client (holding objs) with opts, its clock set to now.
func newFixtureWith(t *testing.T, client *fake.Clientset, opts Options, objs ...runtime.Object) *fixture {
	t.Helper()
	f := informers.NewSharedInformerFactory(client, 0)
	rec := record.NewFakeRecorder(100)
	opts.Now = func() time.Time { return now }
	c, err := New(client, Informers{
		PDBs: f.Policy().V1().PodDisruptionBudgets(), Pods: f.Core().V1().Pods(), ReplicaSets: f.Apps().V1().ReplicaSets(),
		Deployments: f.Apps().V1().Deployments(), StatefulSets: f.Apps().V1().StatefulSets(),
		ReplicationControllers: f.Core().V1().ReplicationControllers(),
	}, rec, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o.(type) {
		case *policyv1.PodDisruptionBudget:
			controllertest.Load(t, f.Policy().V1().PodDisruptionBudgets().Informer(), o)
		case *corev1.Pod:
			controllertest.Load(t, f.Core().V1().Pods().Informer(), o)
		case *appsv1.ReplicaSet:
			controllertest.Load(t, f.Apps().V1().ReplicaSets().Informer(), o)
		case *appsv1.Deployment:
			controllertest.Load(t, f.Apps().V1().Deployments().Informer(), o)
		case *appsv1.StatefulSet:
			controllertest.Load(t, f.Apps().V1().StatefulSets().Informer(), o)
		case *corev1.ReplicationController:
			controllertest.Load(t, f.Core().V1().ReplicationControllers().Informer(), o)
		}
	}
	client.ClearActions()
	return &fixture{client: client, c: c, rec: rec}
}

func (fx *fixture) status(t *testing.T) policyv1.PodDisruptionBudgetStatus {
	t.Helper()
	if err := fx.c.sync(context.Background(), "ns/budget"); err != nil {
		t.Fatal(err)
	}
	p, err := fx.client.PolicyV1().PodDisruptionBudgets("ns").Get(context.Background(), "budget", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Status
}

func budget(minAvailable, maxUnavailable *intstr.IntOrString, disrupted map[string]metav1.Time) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "budget", Namespace: "ns", Generation: 4, ResourceVersion: "1"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: minAvailable, MaxUnavailable: maxUnavailable,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptedPods: disrupted},
	}
}

func ptr(v intstr.IntOrString) *intstr.IntOrString { return &v }

var rs = &appsv1.ReplicaSet{
	ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns", UID: "uid-rs",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-d", Controller: ptrBool(true)}}},
	Spec: appsv1.ReplicaSetSpec{Replicas: ptrInt(3)},
}
var dep = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-d"}, Spec: appsv1.DeploymentSpec{Replicas: ptrInt(4)}}

func ptrBool(b bool) *bool  { return &b }
func ptrInt(i int32) *int32 { return &i }
func readyPod(name string, ready bool, opts ...func(*corev1.Pod)) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "uid-rs", Controller: ptrBool(true)}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func TestMinAvailableCount(t *testing.T) {
	fx := newFixture(t, budget(ptr(intstr.FromInt32(2)), nil, nil), rs, dep,
		readyPod("a", true), readyPod("b", true), readyPod("c", true), readyPod("d", false))
	st := fx.status(t)
	if st.ExpectedPods != 4 || st.DesiredHealthy != 2 || st.CurrentHealthy != 3 || st.DisruptionsAllowed != 1 || st.ObservedGeneration != 4 {
		t.Fatalf("status: %+v", st)
	}
	if c := st.Conditions; len(c) != 1 || c[0].Status != metav1.ConditionTrue || c[0].Reason != policyv1.SufficientPodsReason {
		t.Fatalf("conditions: %+v", c)
	}
}

func TestMaxUnavailableUsesTheDeploymentScale(t *testing.T) {
	fx := newFixture(t, budget(nil, ptr(intstr.FromInt32(1)), nil), rs, dep,
		readyPod("a", true), readyPod("b", true), readyPod("c", true))
	st := fx.status(t)
	// 4 replicas wanted, at most 1 unavailable: 3 must be healthy, 3 are: nothing to spare.
	if st.ExpectedPods != 4 || st.DesiredHealthy != 3 || st.DisruptionsAllowed != 0 {
		t.Fatalf("status: %+v", st)
	}
	if c := st.Conditions; len(c) != 1 || c[0].Status != metav1.ConditionFalse || c[0].Reason != policyv1.InsufficientPodsReason {
		t.Fatalf("conditions: %+v", c)
	}
}

// A ReplicaSet whose Deployment is gone (deleted, its ReplicaSets not yet
// collected) counts its own replicas, as Kubernetes, which then reads the
// ReplicaSet's scale, counts them; the budget does not fail.
func TestReplicaSetOfAGoneDeploymentCountsItsOwnReplicas(t *testing.T) {
	fx := newFixture(t, budget(nil, ptr(intstr.FromInt32(1)), nil), rs,
		readyPod("a", true), readyPod("b", true), readyPod("c", true))
	st := fx.status(t)
	// The ReplicaSet wants 3, at most 1 unavailable: 2 must be healthy, 3 are.
	if st.ExpectedPods != 3 || st.DesiredHealthy != 2 || st.DisruptionsAllowed != 1 {
		t.Fatalf("status: %+v", st)
	}
	if c := st.Conditions; len(c) != 1 || c[0].Reason != policyv1.SufficientPodsReason {
		t.Fatalf("conditions: %+v", c)
	}
}

// Pods with no controller are left out of a scale-based budget, with a
// warning, as Kubernetes does; they do not fail it.
func TestUnmanagedPodsAreLeftOut(t *testing.T) {
	orphan := func(p *corev1.Pod) { p.OwnerReferences = nil }
	fx := newFixture(t, budget(nil, ptr(intstr.FromInt32(1)), nil), rs, dep,
		readyPod("a", true), readyPod("b", true), readyPod("c", true), readyPod("hand-made", true, orphan))
	st := fx.status(t)
	// The Deployment wants 4, at most 1 unavailable: 3 must be healthy, 4 are.
	if st.ExpectedPods != 4 || st.DesiredHealthy != 3 || st.CurrentHealthy != 4 || st.DisruptionsAllowed != 1 {
		t.Fatalf("status: %+v", st)
	}
	if c := st.Conditions; len(c) != 1 || c[0].Reason != policyv1.SufficientPodsReason {
		t.Fatalf("conditions: %+v", c)
	}
	if ev := strings.Join(controllertest.Events(fx.rec.Events), "\n"); !strings.Contains(ev, ReasonUnmanagedPods) {
		t.Fatalf("events: %s", ev)
	}

	// Only unmanaged pods under a percentage: nothing expected, nothing allowed.
	fx = newFixture(t, budget(ptr(intstr.FromString("50%")), nil, nil), readyPod("a", true, orphan), readyPod("b", true, orphan))
	st = fx.status(t)
	if st.ExpectedPods != 0 || st.CurrentHealthy != 2 || st.DisruptionsAllowed != 0 {
		t.Fatalf("status: %+v", st)
	}
}

// A budget with only a selector expects no pods and allows no disruption.
func TestSelectorOnlyBudgetAllowsNothing(t *testing.T) {
	fx := newFixture(t, budget(nil, nil, nil), rs, dep, readyPod("a", true), readyPod("b", true), readyPod("c", true))
	st := fx.status(t)
	if st.ExpectedPods != 0 || st.DesiredHealthy != 0 || st.CurrentHealthy != 3 || st.DisruptionsAllowed != 0 {
		t.Fatalf("status: %+v", st)
	}
}

// A budget that cannot be computed allows nothing and keeps its observed
// generation, so that evictions say it is still being processed.
func TestFailedSyncKeepsObservedGeneration(t *testing.T) {
	foreign := func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Foo", Name: "f", UID: "uid-f", Controller: ptrBool(true)}}
	}
	b := budget(ptr(intstr.FromString("50%")), nil, nil)
	b.Status.ObservedGeneration, b.Status.DisruptionsAllowed = 3, 1
	fx := newFixture(t, b, readyPod("a", true, foreign))
	st := fx.status(t)
	if st.DisruptionsAllowed != 0 || st.ObservedGeneration != 3 {
		t.Fatalf("status: %+v", st)
	}
	if c := st.Conditions; len(c) != 1 || c[0].Reason != policyv1.SyncFailedReason || c[0].ObservedGeneration != 3 {
		t.Fatalf("conditions: %+v", c)
	}
	if ev := strings.Join(controllertest.Events(fx.rec.Events), "\n"); !strings.Contains(ev, ReasonExpectedCount) {
		t.Fatalf("events: %s", ev)
	}
}

// A DisruptionTarget condition whose pod was not deleted goes back to False
// after two minutes; the kubelet's own, and those of finished pods, stay.
func TestStaleDisruptionTargetIsReset(t *testing.T) {
	marked := func(reason string, age time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
				Reason: reason, Message: "Eviction API: evicting", LastTransitionTime: metav1.NewTime(now.Add(-age))})
		}
	}
	finished := func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }
	fx := newFixture(t,
		readyPod("stale", true, marked("EvictionByEvictionAPI", 3*time.Minute)),
		readyPod("fresh", true, marked("PreemptionByScheduler", 30*time.Second)),
		readyPod("kubelet", true, marked(corev1.PodReasonTerminationByKubelet, time.Hour)),
		readyPod("failed", true, marked("EvictionByEvictionAPI", time.Hour), finished))
	for _, name := range []string{"stale", "fresh", "kubelet", "failed"} {
		if err := fx.c.syncStalePod(context.Background(), "ns/"+name); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]corev1.ConditionStatus{"stale": corev1.ConditionFalse, "fresh": corev1.ConditionTrue,
		"kubelet": corev1.ConditionTrue, "failed": corev1.ConditionTrue} {
		p, err := fx.client.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.DisruptionTarget && c.Status != want {
				t.Errorf("%s: DisruptionTarget %s, want %s", name, c.Status, want)
			}
		}
	}
	// The fresh one waits out the rest of its two minutes.
	if fx.c.stale.Len() != 0 {
		t.Errorf("stale queue holds %d keys before the delay", fx.c.stale.Len())
	}
	if wait, stale := fx.c.staleDisruption(readyPod("fresh", true, marked("PreemptionByScheduler", 30*time.Second))); !stale || wait != 90*time.Second {
		t.Errorf("fresh: wait %v, stale %v; want 1m30s", wait, stale)
	}
}

func TestGrantedEvictionsAreNotHealthyUntilGoneOrExpired(t *testing.T) {
	deleting := func(p *corev1.Pod) { ts := metav1.NewTime(now); p.DeletionTimestamp = &ts }
	disrupted := map[string]metav1.Time{
		"a": metav1.NewTime(now.Add(-10 * time.Second)), // granted, pod not deleted yet: not healthy
		"b": metav1.NewTime(now.Add(-3 * time.Minute)),  // expired: healthy again
		"c": metav1.NewTime(now.Add(-5 * time.Second)),  // deletion observed: dropped
		"z": metav1.NewTime(now.Add(-5 * time.Second)),  // pod gone: dropped
	}
	fx := newFixture(t, budget(ptr(intstr.FromInt32(1)), nil, disrupted), rs, dep,
		readyPod("a", true), readyPod("b", true), readyPod("c", true, deleting), readyPod("d", true))
	st := fx.status(t)
	if len(st.DisruptedPods) != 1 || st.DisruptedPods["a"].Time.IsZero() {
		t.Fatalf("disruptedPods: %v", st.DisruptedPods)
	}
	if st.CurrentHealthy != 2 || st.DisruptionsAllowed != 1 {
		t.Fatalf("status: %+v", st)
	}
	// The pod whose granted eviction never came gets a warning, as in
	// Kubernetes; the others none.
	ev := controllertest.Events(fx.rec.Events)
	if len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning "+ReasonNotDeleted+" ") || !strings.Contains(ev[0], "ns/budget") {
		t.Fatalf("events: %q, want one %s warning naming the budget", ev, ReasonNotDeleted)
	}
}

// A pod that two budgets select, which the eviction API refuses to evict,
// gets a MultiplePodDisruptionBudgets warning when it changes, as in
// Kubernetes, and both budgets are counted again.
func TestPodOfTwoBudgetsIsWarned(t *testing.T) {
	other := budget(ptr(intstr.FromInt32(1)), nil, nil)
	other.Name = "other"
	fx := newFixture(t, budget(ptr(intstr.FromInt32(1)), nil, nil), other, readyPod("a", true))
	fx.c.podChanged(readyPod("a", true))
	ev := controllertest.Events(fx.rec.Events)
	if len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning "+ReasonMultipleBudgets+" ") || !strings.Contains(ev[0], "budget, other") {
		t.Fatalf("events: %q, want one %s warning naming both budgets", ev, ReasonMultipleBudgets)
	}
	if n := fx.c.queue.Len(); n != 2 {
		t.Fatalf("%d budgets queued, want 2", n)
	}
	// Its deletion needs no warning.
	fx.c.podChanged(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: readyPod("a", true)})
	if ev := controllertest.Events(fx.rec.Events); len(ev) != 0 {
		t.Fatalf("events on delete: %q", ev)
	}
}

// Percentages are taken of a StatefulSet's replicas and rounded up, for
// minAvailable and maxUnavailable alike, as Kubernetes does.
func TestPercentagesOfAStatefulSetRoundUp(t *testing.T) {
	ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "uid-ss"}, Spec: appsv1.StatefulSetSpec{Replicas: ptrInt(3)}}
	owned := func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "uid-ss", Controller: ptrBool(true)}}
	}
	pods := []runtime.Object{ss, readyPod("db-0", true, owned), readyPod("db-1", true, owned), readyPod("db-2", false, owned)}
	for _, tc := range []struct {
		name                string
		min, max            *intstr.IntOrString
		desired, disruption int32
	}{
		// 50% of 3 is 1.5: 2 must stay, 2 are healthy.
		{"minAvailable", ptr(intstr.FromString("50%")), nil, 2, 0},
		// 50% of 3 may be unavailable, rounded up to 2: 1 must stay.
		{"maxUnavailable", nil, ptr(intstr.FromString("50%")), 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, append([]runtime.Object{budget(tc.min, tc.max, nil)}, pods...)...)
			st := fx.status(t)
			if st.ExpectedPods != 3 || st.CurrentHealthy != 2 || st.DesiredHealthy != tc.desired || st.DisruptionsAllowed != tc.disruption {
				t.Fatalf("status: %+v", st)
			}
		})
	}
}

// A controller reference is matched on group and kind, whatever its version,
// as Kubernetes' disruption controller does: a ReplicaSet referenced as
// extensions/v1beta1 (an object written by an older client) and a Deployment
// referenced as apps/v1beta2 are still found in the apps/v1 caches.
func TestControllerRefsOfOtherVersionsAreFound(t *testing.T) {
	oldRS := rs.DeepCopy()
	oldRS.OwnerReferences[0].APIVersion = "apps/v1beta2"
	old := func(p *corev1.Pod) { p.OwnerReferences[0].APIVersion = "extensions/v1beta1" }
	fx := newFixture(t, budget(nil, ptr(intstr.FromInt32(1)), nil), oldRS, dep,
		readyPod("a", true, old), readyPod("b", true, old), readyPod("c", true, old), readyPod("d", true, old))
	st := fx.status(t)
	if st.ExpectedPods != 4 || st.DesiredHealthy != 3 || st.DisruptionsAllowed != 1 {
		t.Fatalf("status: %+v", st)
	}
}

// A ReplicationController's pods are counted from its cache, as Kubernetes'
// disruption controller reads its rcLister: without discovery (no scale
// subresource client) and without any API call.
func TestReplicationControllerScaleFromItsCache(t *testing.T) {
	rc := &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-rc"},
		Spec: corev1.ReplicationControllerSpec{Replicas: ptrInt(4)}}
	byRC := func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ReplicationController", Name: "web", UID: "uid-rc", Controller: ptrBool(true)}}
	}
	fx := newFixture(t, budget(nil, ptr(intstr.FromInt32(1)), nil), rc,
		readyPod("a", true, byRC), readyPod("b", true, byRC), readyPod("c", true, byRC))
	st := fx.status(t)
	// 4 replicas wanted, at most 1 unavailable: 3 must be healthy, 3 are.
	if st.ExpectedPods != 4 || st.DesiredHealthy != 3 || st.DisruptionsAllowed != 0 {
		t.Fatalf("status: %+v", st)
	}
	for _, a := range fx.client.Actions() {
		if r := a.GetResource().Resource; a.GetVerb() == "get" && r != "poddisruptionbudgets" {
			t.Errorf("read %s through the API", r)
		}
	}

	// Another controller under the same name (a different UID) is not the
	// pods' owner: the budget allows no disruption.
	other := rc.DeepCopy()
	other.UID = "uid-other"
	fx = newFixture(t, budget(nil, ptr(intstr.FromInt32(1)), nil), other, readyPod("a", true, byRC))
	_ = fx.c.sync(context.Background(), "ns/budget")
	p, err := fx.client.PolicyV1().PodDisruptionBudgets("ns").Get(context.Background(), "budget", metav1.GetOptions{})
	if err != nil || p.Status.DisruptionsAllowed != 0 {
		t.Errorf("a replaced controller counted: %+v (%v)", p.Status, err)
	}
}
