package replicaset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
	"github.com/skiffkube/skiff/controllers/expectations"
	"github.com/skiffkube/skiff/controllers/runner"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	client *fake.Clientset
	c      *Controller
	rec    *record.FakeRecorder
	f      informers.SharedInformerFactory
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := controllertest.NewClient(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	rec := record.NewFakeRecorder(1000)
	c, err := New(client, f.Apps().V1().ReplicaSets(), f.Core().V1().Pods(), rec, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o.(type) {
		case *appsv1.ReplicaSet:
			controllertest.Load(t, f.Apps().V1().ReplicaSets().Informer(), o)
		case *corev1.Pod:
			controllertest.Load(t, f.Core().V1().Pods().Informer(), o)
		}
	}
	client.ClearActions()
	return &fixture{client: client, c: c, rec: rec, f: f}
}

func (fx *fixture) sync(t *testing.T, key string) error {
	t.Helper()
	return fx.c.sync(context.Background(), key)
}

func newRS(name string, replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Generation: 2, ResourceVersion: "1"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
}

type podOpt func(*corev1.Pod)

func newPod(name string, owner *appsv1.ReplicaSet, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "1",
			Labels:            map[string]string{"app": "web", "tier": "front"},
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
		},
		Spec:   corev1.PodSpec{NodeName: "node-" + name},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if owner != nil {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner.Name, UID: owner.UID, Controller: &yes}}
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func ready(since time.Duration) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-since)),
		})
	}
}
func unscheduled(p *corev1.Pod) { p.Spec.NodeName = ""; p.Status.Phase = corev1.PodPending }
func pending(p *corev1.Pod)     { p.Status.Phase = corev1.PodPending }
func created(ago time.Duration) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now.Add(-ago)) }
}
func onNode(n string) podOpt                { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func withLabels(l map[string]string) podOpt { return func(p *corev1.Pod) { p.Labels = l } }
func deleting(p *corev1.Pod)                { t := metav1.NewTime(now); p.DeletionTimestamp = &t }
func phase(ph corev1.PodPhase) podOpt       { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func TestSyncCreatesMissingPods(t *testing.T) {
	rs := newRS("web", 3)
	fx := newFixture(t, rs, newPod("p1", rs, ready(time.Hour)))
	if err := fx.sync(t, "ns/web"); err != nil {
		t.Fatal(err)
	}
	creates := controllertest.Filter(fx.client.Actions(), "create", "pods")
	if len(creates) != 2 {
		t.Fatalf("created %d pods, want 2", len(creates))
	}
	list, err := fx.client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 3 {
		t.Fatalf("pods in the API after sync: %d, %v", len(list.Items), err)
	}
	var pod *corev1.Pod
	for i := range list.Items {
		if list.Items[i].Name != "p1" {
			pod = &list.Items[i]
		}
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.UID != rs.UID || ref.Kind != "ReplicaSet" || ref.APIVersion != "apps/v1" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("controller reference = %+v", ref)
	}
	if !strings.HasPrefix(pod.Name, "web-") || pod.Labels["tier"] != "front" || pod.Spec.Containers[0].Image != "nginx" {
		t.Errorf("pod not built from the template: %+v", pod.ObjectMeta)
	}
	if adds, _ := fx.c.exp.Pending("ns/web"); adds != 2 {
		t.Errorf("pending creations = %d, want 2", adds)
	}

	// The informer has not delivered the new pods yet: a second sync must not create more.
	fx.client.ClearActions()
	if err := fx.sync(t, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if n := len(controllertest.Filter(fx.client.Actions(), "create", "pods")); n != 0 {
		t.Fatalf("second sync with unobserved creations created %d pods", n)
	}
	// Once the informer reports them, expectations are satisfied again.
	for i := range list.Items {
		if list.Items[i].Name != "p1" {
			fx.c.addPod(&list.Items[i])
		}
	}
	if !fx.c.exp.Satisfied("ns/web") {
		t.Error("expectations not satisfied after observing the created pods")
	}
	if ev := controllertest.Events(fx.rec.Events); len(ev) < 2 || !strings.Contains(ev[0], "SuccessfulCreate") {
		t.Errorf("events = %v", ev)
	}
}

// ownedBy makes rs one of a Deployment's ReplicaSets.
func ownedBy(rs *appsv1.ReplicaSet, deployment string) *appsv1.ReplicaSet {
	yes := true
	rs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: deployment, UID: types.UID("uid-" + deployment), Controller: &yes}}
	return rs
}

func restarts(counts ...int32) podOpt {
	return func(p *corev1.Pod) {
		for i, n := range counts {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: fmt.Sprint("c", i), RestartCount: n})
		}
	}
}

func deletionCostOf(v string) podOpt {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{DeletionCostAnnotation: v} }
}

func TestSyncScaleDownOrder(t *testing.T) {
	rs := ownedBy(newRS("web", 0), "d")
	sibling := ownedBy(newRS("web-old", 0), "d")
	sibling.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web-old"}}
	stranger := newRS("stranger", 0)
	stranger.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "stranger"}}
	other := func(owner *appsv1.ReplicaSet, name, node string) *corev1.Pod {
		return newPod(name, owner, onNode(node), withLabels(owner.Spec.Selector.MatchLabels))
	}
	tests := []struct {
		name       string
		replicas   int32
		standalone bool // the ReplicaSet has no controller
		pods       []*corev1.Pod
		others     []runtime.Object // other ReplicaSets and their pods
		want       []string
	}{
		{"unscheduled before pending before not ready before ready", 1, false, []*corev1.Pod{
			newPod("ready", rs, ready(time.Hour)),
			newPod("notready", rs),
			newPod("pending", rs, pending),
			newPod("unscheduled", rs, unscheduled),
		}, nil, []string{"notready", "pending", "unscheduled"}},
		{"ready more recently goes first", 2, false, []*corev1.Pod{
			newPod("old", rs, ready(time.Hour)),
			newPod("new", rs, ready(time.Minute)),
			newPod("mid", rs, ready(10*time.Minute)),
		}, nil, []string{"new"}},
		{"newer pods go first when otherwise equal", 1, false, []*corev1.Pod{
			newPod("a", rs, created(time.Hour)),
			newPod("b", rs, created(time.Minute)),
		}, nil, []string{"b"}},
		{"doubled-up pods go first", 2, false, []*corev1.Pod{
			newPod("alone", rs, onNode("n1")),
			newPod("twin1", rs, onNode("n2"), created(2*time.Hour)),
			newPod("twin2", rs, onNode("n2"), created(3*time.Hour)),
		}, nil, []string{"twin1"}},
		{"pods of the Deployment's other ReplicaSets count on a node", 1, false, []*corev1.Pod{
			newPod("a", rs, onNode("n1"), created(time.Hour)),
			newPod("b", rs, onNode("n2"), created(3*time.Hour)),
		}, []runtime.Object{sibling, other(sibling, "s", "n2"), stranger, other(stranger, "x1", "n1"), other(stranger, "x2", "n1")},
			[]string{"b"}},
		{"a ReplicaSet without a controller does not rank by node", 2, true, []*corev1.Pod{
			newPod("alone", rs, onNode("n1"), created(time.Hour)),
			newPod("twin1", rs, onNode("n2"), created(2*time.Hour)),
			newPod("twin2", rs, onNode("n2"), created(3*time.Hour)),
		}, nil, []string{"alone"}},
		{"creation times in one log2 bucket are compared by uid", 1, false, []*corev1.Pod{
			newPod("y", rs, created(40*time.Minute)),
			newPod("x", rs, created(50*time.Minute)),
		}, nil, []string{"x"}},
		{"ready times in one log2 bucket are compared by uid", 1, false, []*corev1.Pod{
			newPod("y", rs, ready(40*time.Minute)),
			newPod("x", rs, ready(50*time.Minute)),
		}, nil, []string{"x"}},
		{"restarts compare the highest container count, not the sum", 1, false, []*corev1.Pod{
			newPod("many", rs, restarts(3, 3)),
			newPod("most", rs, restarts(5)),
		}, nil, []string{"most"}},
		{"restarts of sidecars break a tie", 1, false, []*corev1.Pod{
			newPod("b", rs, restarts(1)),
			newPod("z", rs, restarts(1), func(p *corev1.Pod) {
				always := corev1.ContainerRestartPolicyAlways
				p.Spec.InitContainers = []corev1.Container{{Name: "init"}, {Name: "proxy", RestartPolicy: &always}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", RestartCount: 9}, {Name: "proxy", RestartCount: 2}}
			}),
		}, nil, []string{"z"}},
		{"deletion cost wins over readiness time", 1, false, []*corev1.Pod{
			newPod("cheap", rs, ready(time.Hour), deletionCostOf("-5")),
			newPod("fresh", rs, ready(time.Minute)),
		}, nil, []string{"cheap"}},
		{"a deletion cost with a plus sign counts as 0", 1, false, []*corev1.Pod{
			newPod("plus", rs, deletionCostOf("+10")),
			newPod("five", rs, deletionCostOf("5")),
		}, nil, []string{"plus"}},
		{"a deletion cost with leading zeros counts as 0", 1, false, []*corev1.Pod{
			newPod("zeros", rs, deletionCostOf("008")),
			newPod("five", rs, deletionCostOf("5")),
		}, nil, []string{"zeros"}},
		{"a deletion cost beyond int32 counts as 0", 1, false, []*corev1.Pod{
			newPod("big", rs, deletionCostOf("3000000000")),
			newPod("five", rs, deletionCostOf("5")),
		}, nil, []string{"big"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ownedBy(newRS("web", tc.replicas), "d")
			if tc.standalone {
				r.OwnerReferences = nil
			}
			objs := []runtime.Object{r}
			for _, p := range tc.pods {
				objs = append(objs, p)
			}
			objs = append(objs, tc.others...)
			fx := newFixture(t, objs...)
			if err := fx.sync(t, "ns/web"); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range controllertest.Filter(fx.client.Actions(), "delete", "pods") {
				got = append(got, a.(k8stesting.DeleteAction).GetName())
			}
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("deleted %v, want %v", got, want)
			}
			if _, dels := fx.c.exp.Pending("ns/web"); dels != len(want) {
				t.Errorf("pending deletions = %d, want %d", dels, len(want))
			}
		})
	}
}

func TestSyncIgnoresInactivePodsAndOthersPods(t *testing.T) {
	rs := newRS("web", 2)
	other := newRS("other", 1)
	fx := newFixture(t, rs, other,
		newPod("done", rs, phase(corev1.PodSucceeded)),
		newPod("failed", rs, phase(corev1.PodFailed)),
		newPod("dying", rs, deleting),
		newPod("theirs", other), // matches our selector but has another controller
		newPod("mine", rs, ready(time.Hour)),
	)
	if err := fx.sync(t, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if n := len(controllertest.Filter(fx.client.Actions(), "create", "pods")); n != 1 {
		t.Fatalf("created %d pods, want 1", n)
	}
	if n := len(controllertest.Filter(fx.client.Actions(), "delete", "pods")); n != 0 {
		t.Fatalf("deleted %d pods, want 0", n)
	}
	got, _ := fx.client.AppsV1().ReplicaSets("ns").Get(context.Background(), "web", metav1.GetOptions{})
	// status.terminatingReplicas belongs to the DeploymentReplicaSetTerminatingReplicas feature,
	// alpha and off in Kubernetes v1.33: the field is left out even with a pod terminating.
	if got.Status.Replicas != 1 || got.Status.TerminatingReplicas != nil {
		t.Errorf("status = %+v", got.Status)
	}
}

func TestSyncAdoptsAndReleases(t *testing.T) {
	rs := newRS("web", 2)
	orphan := newPod("orphan", nil, ready(time.Hour))
	stray := newPod("stray", rs, withLabels(map[string]string{"app": "db"}))
	unrelated := newPod("unrelated", nil, withLabels(map[string]string{"app": "db"}))
	mine := newPod("mine", rs, ready(time.Hour))
	fx := newFixture(t, rs, orphan, stray, unrelated, mine)
	if err := fx.sync(t, "ns/web"); err != nil {
		t.Fatal(err)
	}
	patches := controllertest.Filter(fx.client.Actions(), "patch", "pods")
	if len(patches) != 2 {
		t.Fatalf("patched %d pods, want 2 (adopt orphan, release stray)", len(patches))
	}
	ctx := context.Background()
	p, _ := fx.client.CoreV1().Pods("ns").Get(ctx, "orphan", metav1.GetOptions{})
	if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != rs.UID {
		t.Errorf("orphan not adopted: %+v", p.OwnerReferences)
	}
	p, _ = fx.client.CoreV1().Pods("ns").Get(ctx, "stray", metav1.GetOptions{})
	if len(p.OwnerReferences) != 0 {
		t.Errorf("stray not released: %+v", p.OwnerReferences)
	}
	// Adopted orphan + mine = 2 replicas: nothing to create or delete.
	if n := len(controllertest.Filter(fx.client.Actions(), "create", "pods")); n != 0 {
		t.Errorf("created %d pods, want 0", n)
	}
}

func TestSyncNoAdoptionWhileOwnerIsDeleted(t *testing.T) {
	rs := newRS("web", 2)
	stamp := metav1.NewTime(now)
	rs.DeletionTimestamp = &stamp
	fx := newFixture(t, rs, newPod("orphan", nil))
	if err := fx.sync(t, "ns/web"); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"patch", "create", "delete"} {
		if n := len(controllertest.Filter(fx.client.Actions(), verb, "pods")); n != 0 {
			t.Errorf("%s on pods of a ReplicaSet being deleted: %d", verb, n)
		}
	}
}

func TestSyncStatus(t *testing.T) {
	tests := []struct {
		name            string
		minReadySeconds int32
		pods            func(rs *appsv1.ReplicaSet) []*corev1.Pod
		want            appsv1.ReplicaSetStatus
	}{
		{"ready and available without minReadySeconds", 0, func(rs *appsv1.ReplicaSet) []*corev1.Pod {
			return []*corev1.Pod{newPod("a", rs, ready(time.Second)), newPod("b", rs, ready(time.Hour)), newPod("c", rs)}
		}, appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 2, ObservedGeneration: 2}},
		{"minReadySeconds holds back recently ready pods", 30, func(rs *appsv1.ReplicaSet) []*corev1.Pod {
			return []*corev1.Pod{newPod("a", rs, ready(10*time.Second)), newPod("b", rs, ready(time.Hour)), newPod("c", rs, ready(30*time.Second))}
		}, appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 2, ObservedGeneration: 2}},
		{"fully labeled counts only pods with every template label", 0, func(rs *appsv1.ReplicaSet) []*corev1.Pod {
			return []*corev1.Pod{newPod("a", rs, withLabels(map[string]string{"app": "web"})), newPod("b", rs), newPod("c", rs)}
		}, appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 2, ObservedGeneration: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := newRS("web", 3)
			rs.Spec.MinReadySeconds = tc.minReadySeconds
			objs := []runtime.Object{rs}
			for _, p := range tc.pods(rs) {
				objs = append(objs, p)
			}
			fx := newFixture(t, objs...)
			if err := fx.sync(t, "ns/web"); err != nil {
				t.Fatal(err)
			}
			got, err := fx.client.AppsV1().ReplicaSets("ns").Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			st := got.Status
			if fmt.Sprint(st) != fmt.Sprint(tc.want) {
				t.Errorf("status = %+v\nwant     %+v", st, tc.want)
			}
			updates := controllertest.Filter(fx.client.Actions(), "update", "replicasets")
			if len(updates) != 1 || updates[0].GetSubresource() != "status" {
				t.Errorf("want exactly one status update, got %v", updates)
			}
		})
	}
}

func TestSyncReportsCreateFailure(t *testing.T) {
	rs := newRS("web", 2)
	fx := newFixture(t, rs)
	fx.client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, fmt.Errorf("exceeded quota")
	})
	if err := fx.sync(t, "ns/web"); err == nil {
		t.Fatal("sync succeeded although every create failed")
	}
	// Slow start: one failed call, not two.
	if n := len(controllertest.Filter(fx.client.Actions(), "create", "pods")); n != 1 {
		t.Errorf("create calls = %d, want 1", n)
	}
	if !fx.c.exp.Satisfied("ns/web") {
		t.Error("failed creates left expectations pending")
	}
	got, _ := fx.client.AppsV1().ReplicaSets("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Reason != "FailedCreate" {
		t.Errorf("conditions = %+v", got.Status.Conditions)
	}
	if ev := controllertest.Events(fx.rec.Events); len(ev) != 1 || !strings.Contains(ev[0], "FailedCreate") {
		t.Errorf("events = %v", ev)
	}
}

// When several creates of one slow-start batch fail, the ReplicaFailure condition (and the
// Deployment condition copied from it) carries one of the errors, as Kubernetes' slowStartBatch
// returns one, not all of them run together.
func TestSyncCreateFailureConditionHoldsOneError(t *testing.T) {
	rs := newRS("web", 3)
	fx := newFixture(t, rs)
	calls := 0
	var mu sync.Mutex
	fx.client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			return false, nil, nil // the first batch (one pod) goes through
		}
		return true, nil, fmt.Errorf("exceeded quota (call %d)", calls)
	})
	if err := fx.sync(t, "ns/web"); err == nil {
		t.Fatal("sync succeeded although creates failed")
	}
	if n := len(controllertest.Filter(fx.client.Actions(), "create", "pods")); n != 3 {
		t.Fatalf("create calls = %d, want 3 (batches of 1 and 2)", n)
	}
	got, _ := fx.client.AppsV1().ReplicaSets("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if len(got.Status.Conditions) != 1 {
		t.Fatalf("conditions = %+v", got.Status.Conditions)
	}
	if msg := got.Status.Conditions[0].Message; !strings.HasPrefix(msg, "exceeded quota (call ") || strings.Contains(msg, "\n") {
		t.Errorf("condition message = %q, want a single error", msg)
	}
}

func TestSyncDeletedReplicaSet(t *testing.T) {
	fx := newFixture(t)
	fx.c.exp.ExpectCreations("ns/gone", 3)
	if err := fx.sync(t, "ns/gone"); err != nil {
		t.Fatal(err)
	}
	if len(fx.client.Actions()) != 0 {
		t.Errorf("actions for a missing ReplicaSet: %v", fx.client.Actions())
	}
	if adds, _ := fx.c.exp.Pending("ns/gone"); adds != 0 {
		t.Error("expectations of a deleted ReplicaSet kept")
	}
}

func TestSyncGhostDeletionDelaysOnlyOnce(t *testing.T) {
	rs := newRS("web", 1)
	fx := newFixture(t, rs, newPod("p1", rs, ready(time.Hour)), newPod("ghost", rs))
	clock := now
	fx.c.exp = expectations.New(0, func() time.Time { return clock })
	if err := fx.sync(t, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if n := len(controllertest.Filter(fx.client.Actions(), "delete", "pods")); n != 1 {
		t.Fatalf("deleted %d pods, want 1", n)
	}
	// The deletion is never observed (the watch event was lost and the pod left the cache with the
	// next relist); once the expectations expire the controller acts again.
	if err := fx.f.Core().V1().Pods().Informer().GetIndexer().Delete(newPod("ghost", rs)); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(expectations.DefaultTTL + time.Second)
	scaled := rs.DeepCopy()
	three := int32(3)
	scaled.Spec.Replicas = &three
	controllertest.Load(t, fx.f.Apps().V1().ReplicaSets().Informer(), scaled)
	fx.client.ClearActions()
	if err := fx.sync(t, "ns/web"); err != nil {
		t.Fatal(err)
	}
	creates := controllertest.Filter(fx.client.Actions(), "create", "pods")
	if len(creates) != 2 {
		t.Fatalf("created %d pods after the expectations expired, want 2", len(creates))
	}
	for _, a := range creates {
		fx.c.addPod(a.(k8stesting.CreateAction).GetObject().(*corev1.Pod))
	}
	// Both creations observed: the ghost deletion must not hold the next sync back for another TTL.
	if !fx.c.exp.Satisfied("ns/web") {
		adds, dels := fx.c.exp.Pending("ns/web")
		t.Fatalf("expectations not satisfied after the creations were observed (pending adds %d, deletions %d)", adds, dels)
	}
}

func TestSyncDeleteOfAGonePodIsObserved(t *testing.T) {
	rs := newRS("web", 1)
	// The cache still lists "gone", but it was already deleted: its removal reached the informer
	// before this sync expected it, so no later event will ever observe it.
	fx := newFixture(t, rs, newPod("p1", rs, ready(time.Hour)), newPod("gone", rs))
	fx.client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(corev1.Resource("pods"), a.(k8stesting.DeleteAction).GetName())
	})
	if err := fx.sync(t, "ns/web"); err != nil {
		t.Fatalf("a pod already gone is not a failure: %v", err)
	}
	dels := controllertest.Filter(fx.client.Actions(), "delete", "pods")
	if len(dels) != 1 || dels[0].(k8stesting.DeleteAction).GetName() != "gone" {
		t.Fatalf("deletes = %v, want one of gone", dels)
	}
	if !fx.c.exp.Satisfied("ns/web") {
		t.Error("a delete answered NotFound left its deletion expected")
	}
	for _, e := range controllertest.Events(fx.rec.Events) {
		if strings.Contains(e, "FailedDelete") {
			t.Errorf("event for a pod already gone: %s", e)
		}
	}
}

func TestSyncOrphanGoneBeforeAdoptionIsNotClaimed(t *testing.T) {
	rs := newRS("web", 2)
	fx := newFixture(t, rs, newPod("mine", rs, ready(time.Hour)), newPod("orphan", nil, ready(time.Hour)))
	fx.client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(corev1.Resource("pods"), a.(k8stesting.PatchAction).GetName())
	})
	if err := fx.sync(t, "ns/web"); err != nil {
		t.Fatalf("an orphan already gone is not a failure: %v", err)
	}
	if n := len(controllertest.Filter(fx.client.Actions(), "patch", "pods")); n != 1 {
		t.Fatalf("adoption patches = %d, want 1", n)
	}
	// Only "mine" is the ReplicaSet's: the missing replica is created.
	if n := len(controllertest.Filter(fx.client.Actions(), "create", "pods")); n != 1 {
		t.Errorf("created %d pods, want 1", n)
	}
	got, _ := fx.client.AppsV1().ReplicaSets("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if got.Status.Replicas != 1 {
		t.Errorf("status.replicas = %d, want 1 (the gone orphan is not counted)", got.Status.Replicas)
	}
}

func TestPodWithLegacyControllerRefResolves(t *testing.T) {
	rs := newRS("web", 2)
	legacy := newPod("legacy", rs, ready(time.Hour))
	legacy.OwnerReferences[0].APIVersion = "extensions/v1beta1"
	fx := newFixture(t, rs, legacy, newPod("mine", rs, ready(time.Hour)))

	fx.c.exp.ExpectCreations("ns/web", 1)
	fx.c.addPod(legacy)
	if !fx.c.exp.Satisfied("ns/web") {
		t.Error("the creation of a pod whose controller reference names extensions/v1beta1 was not observed")
	}
	fx.c.exp.ExpectDeletions("ns/web", []string{"ns/legacy"})
	fx.c.deletePod(legacy)
	if !fx.c.exp.Satisfied("ns/web") {
		t.Error("the deletion of a pod whose controller reference names extensions/v1beta1 was not observed")
	}
	if got := fx.c.queue.Len(); got != 1 {
		t.Errorf("queued keys = %d, want the ReplicaSet's", got)
	}
}

func TestReplicaSetRecreatedUnderTheSameName(t *testing.T) {
	old := newRS("web", 2)
	recreated := newRS("web", 2)
	recreated.UID = "uid-web-2"
	recreated.ResourceVersion = "5"
	fx := newFixture(t, recreated)
	// The old ReplicaSet was waiting for two creations when it was deleted; the informer missed the
	// delete and delivers the new one as an update of the old.
	fx.c.exp.ExpectCreations("ns/web", 2)
	fx.c.updateRS(old, recreated)
	if err := fx.sync(t, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if n := len(controllertest.Filter(fx.client.Actions(), "create", "pods")); n != 2 {
		t.Fatalf("the recreated ReplicaSet created %d pods, want 2", n)
	}
}

// As Kubernetes' ReplicaSet controller (processNextWorkItem requeues a failed
// sync with backoff, never dropping it): a ReplicaSet whose pod creates are
// refused for a while (a quota exceeded, a webhook down, an API server
// overloaded) gets its pods once the creates are allowed again. No event is
// due to bring it back in the meantime: nothing about it or its pods changes.
func TestRefusedCreatesAreRetriedUntilTheyAreAllowed(t *testing.T) {
	const refused = runner.MaxRetries + 5
	client := controllertest.NewClient(newRS("web", 3))
	creates := controllertest.RefuseFirst(client, "create", "pods", refused, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("exceeded quota")))
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, f.Apps().V1().ReplicaSets(), f.Core().V1().Pods(), record.NewFakeRecorder(1000),
		Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c.queue = runner.NewQueueWithRateLimiter(Name, controllertest.FastBackoff())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	defer func() { cancel(); <-done; f.Shutdown() }()
	f.Start(ctx.Done())
	go func() { defer close(done); c.Run(ctx, 1) }()

	var pods int
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		pods = len(list.Items)
		return pods == 3, nil
	})
	if err != nil {
		t.Fatalf("%d pods of 3 after %d creates, the first %d refused", pods, creates.Load(), refused)
	}
}
