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
	client := controllertest.NewClient(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	rec := record.NewFakeRecorder(100)
	c, err := New(client, Informers{
		PDBs: f.Policy().V1().PodDisruptionBudgets(), Pods: f.Core().V1().Pods(), ReplicaSets: f.Apps().V1().ReplicaSets(),
		Deployments: f.Apps().V1().Deployments(), StatefulSets: f.Apps().V1().StatefulSets(),
	}, rec, Options{Now: func() time.Time { return now }})
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

func TestPercentageWithoutControllerFails(t *testing.T) {
	orphan := func(p *corev1.Pod) { p.OwnerReferences = nil }
	fx := newFixture(t, budget(ptr(intstr.FromString("50%")), nil, nil), readyPod("a", true, orphan), readyPod("b", true, orphan))
	st := fx.status(t)
	if st.DisruptionsAllowed != 0 || len(st.Conditions) != 1 || st.Conditions[0].Reason != policyv1.SyncFailedReason {
		t.Fatalf("status: %+v", st)
	}
	if ev := strings.Join(controllertest.Events(fx.rec.Events), "\n"); !strings.Contains(ev, ReasonExpectedCount) {
		t.Fatalf("events: %s", ev)
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
}
