package deployment

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
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
	rec := record.NewFakeRecorder(1000)
	c, err := New(client, f.Apps().V1().Deployments(), f.Apps().V1().ReplicaSets(), f.Core().V1().Pods(), rec, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o.(type) {
		case *appsv1.Deployment:
			controllertest.Load(t, f.Apps().V1().Deployments().Informer(), o)
		case *appsv1.ReplicaSet:
			controllertest.Load(t, f.Apps().V1().ReplicaSets().Informer(), o)
		case *corev1.Pod:
			controllertest.Load(t, f.Core().V1().Pods().Informer(), o)
		}
	}
	client.ClearActions()
	return &fixture{client: client, c: c, rec: rec}
}

func (fx *fixture) sync(t *testing.T) {
	t.Helper()
	if err := fx.c.sync(context.Background(), "ns/web"); err != nil {
		t.Fatalf("sync: %v", err)
	}
}

func (fx *fixture) deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	d, err := fx.client.AppsV1().Deployments("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (fx *fixture) replicaSets(t *testing.T) map[string]*appsv1.ReplicaSet {
	t.Helper()
	l, err := fx.client.AppsV1().ReplicaSets("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*appsv1.ReplicaSet{}
	for i := range l.Items {
		out[l.Items[i].Name] = &l.Items[i]
	}
	return out
}

func template(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
	}
}

func newDeployment(replicas int32, image string, surge, unavailable intstr.IntOrString) *appsv1.Deployment {
	hist, deadline := int32(10), int32(600)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-web", Generation: 1, ResourceVersion: "1"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: template(image),
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
			},
			RevisionHistoryLimit:    &hist,
			ProgressDeadlineSeconds: &deadline,
		},
	}
}

// rsFor builds a ReplicaSet owned by d for image, with spec and available replicas, at a revision.
func rsFor(d *appsv1.Deployment, image string, spec, available int32, rev int, age time.Duration) *appsv1.ReplicaSet {
	tmpl := template(image)
	hash := ComputeHash(&tmpl, nil)
	tmpl.Labels[PodTemplateHashLabel] = hash
	yes := true
	surge, _ := fenceposts(d)
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-" + hash, Namespace: "ns", UID: types.UID("uid-rs-" + image), ResourceVersion: "1",
			Labels:            tmpl.Labels,
			CreationTimestamp: metav1.NewTime(now.Add(-age)),
			Annotations: map[string]string{
				RevisionAnnotation:        strconv.Itoa(rev),
				DesiredReplicasAnnotation: strconv.Itoa(int(replicas(d))),
				MaxReplicasAnnotation:     strconv.Itoa(int(replicas(d) + surge)),
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: d.UID, Controller: &yes}},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &spec,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", PodTemplateHashLabel: hash}},
			Template: tmpl,
		},
		Status: appsv1.ReplicaSetStatus{Replicas: spec, ReadyReplicas: available, AvailableReplicas: available},
	}
}

func rsName(image string) string {
	tmpl := template(image)
	return "web-" + ComputeHash(&tmpl, nil)
}

func TestNewDeploymentCreatesReplicaSet(t *testing.T) {
	d := newDeployment(3, "v1", intstr.FromString("25%"), intstr.FromString("25%"))
	d.Annotations = map[string]string{ChangeCauseAnnotation: "kubectl create deployment web", LastAppliedAnnotation: "{}"}
	fx := newFixture(t, d)
	fx.sync(t)
	rss := fx.replicaSets(t)
	rs, ok := rss[rsName("v1")]
	if !ok || len(rss) != 1 {
		t.Fatalf("replicasets = %v, want only %s", keys(rss), rsName("v1"))
	}
	hash := rs.Labels[PodTemplateHashLabel]
	if rs.Name != "web-"+hash || rs.Spec.Selector.MatchLabels[PodTemplateHashLabel] != hash || rs.Spec.Template.Labels[PodTemplateHashLabel] != hash {
		t.Errorf("pod-template-hash not applied: name %s labels %v selector %v", rs.Name, rs.Spec.Template.Labels, rs.Spec.Selector)
	}
	if *rs.Spec.Replicas != 3 {
		t.Errorf("new replicaset replicas = %d, want 3", *rs.Spec.Replicas)
	}
	if rs.Annotations[RevisionAnnotation] != "1" || rs.Annotations[ChangeCauseAnnotation] == "" || rs.Annotations[LastAppliedAnnotation] != "" {
		t.Errorf("replicaset annotations = %v", rs.Annotations)
	}
	if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != d.UID {
		t.Errorf("replicaset not controlled by the deployment: %v", rs.OwnerReferences)
	}
	got := fx.deployment(t)
	if got.Annotations[RevisionAnnotation] != "1" {
		t.Errorf("deployment revision annotation = %q", got.Annotations[RevisionAnnotation])
	}
	// The revision goes through /status, as kube-controller-manager writes it: on the main
	// resource an annotation change would move the Deployment's generation.
	for _, a := range controllertest.Filter(fx.client.Actions(), "update", "deployments") {
		if a.GetSubresource() != "status" {
			t.Errorf("deployment written through the main resource: %v", a)
		}
	}
	if c := getCondition(&got.Status, appsv1.DeploymentProgressing); c == nil || c.Reason != NewRSReason {
		t.Errorf("Progressing = %+v, want reason %s", c, NewRSReason)
	}
	if c := getCondition(&got.Status, appsv1.DeploymentAvailable); c == nil || c.Status != corev1.ConditionFalse || c.Reason != MinimumReplicasUnavailable {
		t.Errorf("Available = %+v", c)
	}
}

func TestRollingUpdateSteps(t *testing.T) {
	type sizes struct{ oldSpec, oldAvail, newSpec, newAvail int32 }
	tests := []struct {
		name               string
		surge, unavailable intstr.IntOrString
		in                 sizes
		noNewRS            bool
		wantOld, wantNew   int32
	}{
		{"surge 1: the new replicaset is created with 1, the old keeps 3", intstr.FromInt32(1), intstr.FromInt32(0), sizes{3, 3, 0, 0}, true, 3, 1},
		{"surge 1: nothing moves while the new pod is unavailable", intstr.FromInt32(1), intstr.FromInt32(0), sizes{3, 3, 1, 0}, false, 3, 1},
		{"surge 1: an available new pod lets one old pod go", intstr.FromInt32(1), intstr.FromInt32(0), sizes{3, 3, 1, 1}, false, 2, 1},
		{"surge 1: room under the surge grows the new replicaset", intstr.FromInt32(1), intstr.FromInt32(0), sizes{2, 2, 1, 1}, false, 2, 2},
		{"surge 1: the last old pod goes", intstr.FromInt32(1), intstr.FromInt32(0), sizes{1, 1, 3, 3}, false, 0, 3},
		{"unavailable 1: the new replicaset starts empty and one old pod goes in the same sync", intstr.FromInt32(0), intstr.FromInt32(1), sizes{3, 3, 0, 0}, true, 2, 0},
		{"unavailable 1: one old pod goes first", intstr.FromInt32(0), intstr.FromInt32(1), sizes{3, 3, 0, 0}, false, 2, 0},
		{"unavailable 1: then the new replicaset takes its place", intstr.FromInt32(0), intstr.FromInt32(1), sizes{2, 2, 0, 0}, false, 2, 1},
		{"an unavailable new pod blocks scaling down even unhealthy old pods", intstr.FromInt32(1), intstr.FromInt32(0), sizes{3, 1, 1, 0}, false, 3, 1},
		{"unhealthy old pods go first and cost no availability", intstr.FromInt32(1), intstr.FromInt32(0), sizes{3, 1, 1, 1}, false, 2, 1},
		{"maxUnavailable 2 removes unhealthy then available old pods", intstr.FromInt32(0), intstr.FromInt32(2), sizes{3, 2, 0, 0}, false, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newDeployment(3, "v2", tc.surge, tc.unavailable)
			old := rsFor(d, "v1", tc.in.oldSpec, tc.in.oldAvail, 1, time.Hour)
			objs := []runtime.Object{d, old}
			if !tc.noNewRS {
				objs = append(objs, rsFor(d, "v2", tc.in.newSpec, tc.in.newAvail, 2, time.Minute))
			}
			fx := newFixture(t, objs...)
			fx.sync(t)
			rss := fx.replicaSets(t)
			o, n := rss[rsName("v1")], rss[rsName("v2")]
			if n == nil {
				t.Fatalf("no new replicaset; have %v", keys(rss))
			}
			if *o.Spec.Replicas != tc.wantOld || *n.Spec.Replicas != tc.wantNew {
				t.Errorf("old=%d new=%d, want old=%d new=%d", *o.Spec.Replicas, *n.Spec.Replicas, tc.wantOld, tc.wantNew)
			}
			if n.Annotations[RevisionAnnotation] != "2" {
				t.Errorf("new revision = %q, want 2", n.Annotations[RevisionAnnotation])
			}
		})
	}
}

func TestRecreate(t *testing.T) {
	d := newDeployment(3, "v2", intstr.FromInt32(0), intstr.FromInt32(0))
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}

	t.Run("old replicasets are scaled to zero first", func(t *testing.T) {
		fx := newFixture(t, d, rsFor(d, "v1", 3, 3, 1, time.Hour))
		fx.sync(t)
		rss := fx.replicaSets(t)
		if len(rss) != 1 || *rss[rsName("v1")].Spec.Replicas != 0 {
			t.Fatalf("want only the old replicaset scaled to 0, have %v", keys(rss))
		}
	})
	t.Run("the new replicaset waits for old pods to stop", func(t *testing.T) {
		old := rsFor(d, "v1", 0, 0, 1, time.Hour)
		yes := true
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "old-pod", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: old.Name, UID: old.UID, Controller: &yes}}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		}
		fx := newFixture(t, d, old, pod)
		fx.sync(t)
		if rss := fx.replicaSets(t); len(rss) != 1 {
			t.Fatalf("new replicaset created while an old pod runs: %v", keys(rss))
		}
	})
	t.Run("then the new replicaset gets every replica", func(t *testing.T) {
		fx := newFixture(t, d, rsFor(d, "v1", 0, 0, 1, time.Hour))
		fx.sync(t)
		n := fx.replicaSets(t)[rsName("v2")]
		if n == nil || *n.Spec.Replicas != 3 {
			t.Fatalf("new replicaset = %v", n)
		}
	})
}

func TestStatusAndConditions(t *testing.T) {
	t.Run("a finished rollout is complete and available", func(t *testing.T) {
		d := newDeployment(3, "v1", intstr.FromInt32(1), intstr.FromInt32(0))
		d.Generation = 4
		fx := newFixture(t, d, rsFor(d, "v1", 3, 3, 1, time.Hour))
		fx.sync(t)
		st := fx.deployment(t).Status
		if st.ObservedGeneration != 4 || st.Replicas != 3 || st.UpdatedReplicas != 3 || st.AvailableReplicas != 3 || st.ReadyReplicas != 3 || st.UnavailableReplicas != 0 {
			t.Errorf("status = %+v", st)
		}
		if c := getCondition(&st, appsv1.DeploymentProgressing); c == nil || c.Reason != NewRSAvailableReason || c.Status != corev1.ConditionTrue {
			t.Errorf("Progressing = %+v", c)
		}
		if c := getCondition(&st, appsv1.DeploymentAvailable); c == nil || c.Reason != MinimumReplicasAvailable {
			t.Errorf("Available = %+v", c)
		}
	})
	t.Run("no progress past the deadline is ProgressDeadlineExceeded", func(t *testing.T) {
		d := newDeployment(3, "v2", intstr.FromInt32(1), intstr.FromInt32(0))
		old, n := rsFor(d, "v1", 3, 3, 1, time.Hour), rsFor(d, "v2", 1, 0, 2, time.Hour)
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 4, UpdatedReplicas: 1, ReadyReplicas: 3, AvailableReplicas: 3, UnavailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{
				newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, MinimumReplicasAvailable, "Deployment has minimum availability.", now),
				newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, RSUpdatedReason, "", now.Add(-11*time.Minute)),
			}}
		fx := newFixture(t, d, old, n)
		fx.sync(t)
		c := getCondition(&fx.deployment(t).Status, appsv1.DeploymentProgressing)
		if c == nil || c.Reason != TimedOutReason || c.Status != corev1.ConditionFalse {
			t.Errorf("Progressing = %+v, want %s", c, TimedOutReason)
		}
	})
	t.Run("progress refreshes the deadline", func(t *testing.T) {
		d := newDeployment(3, "v2", intstr.FromInt32(1), intstr.FromInt32(0))
		old, n := rsFor(d, "v1", 3, 3, 1, time.Hour), rsFor(d, "v2", 1, 1, 2, time.Hour)
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 4, UpdatedReplicas: 1, ReadyReplicas: 3, AvailableReplicas: 3,
			Conditions: []appsv1.DeploymentCondition{newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, NewRSReason, "", now.Add(-11*time.Minute))}}
		fx := newFixture(t, d, old, n)
		fx.sync(t)
		c := getCondition(&fx.deployment(t).Status, appsv1.DeploymentProgressing)
		if c == nil || c.Reason != RSUpdatedReason || !c.LastUpdateTime.Time.Equal(now) {
			t.Errorf("Progressing = %+v, want %s updated now", c, RSUpdatedReason)
		}
	})
}

// status.terminatingReplicas comes with the DeploymentReplicaSetTerminatingReplicas feature, alpha
// and off in Kubernetes v1.33: a ReplicaSet that reports it (written by a newer controller) does
// not make it appear on the Deployment.
func TestNoTerminatingReplicasInStatus(t *testing.T) {
	d := newDeployment(3, "v1", intstr.FromInt32(1), intstr.FromInt32(0))
	rs := rsFor(d, "v1", 3, 3, 1, time.Hour)
	two := int32(2)
	rs.Status.TerminatingReplicas = &two
	fx := newFixture(t, d, rs)
	fx.sync(t)
	if st := fx.deployment(t).Status; st.Replicas != 3 || st.TerminatingReplicas != nil {
		t.Errorf("status = %+v, want replicas 3 and no terminatingReplicas", st)
	}
}

func TestRollbackReusesOldReplicaSet(t *testing.T) {
	// kubectl rollout undo copies revision 1's template back into the deployment.
	d := newDeployment(3, "v1", intstr.FromInt32(1), intstr.FromInt32(0))
	d.Annotations = map[string]string{RevisionAnnotation: "2"}
	fx := newFixture(t, d, rsFor(d, "v1", 0, 0, 1, time.Hour), rsFor(d, "v2", 3, 3, 2, time.Minute))
	fx.sync(t)
	rss := fx.replicaSets(t)
	if len(rss) != 2 {
		t.Fatalf("replicasets = %v, want the two existing ones", keys(rss))
	}
	back := rss[rsName("v1")]
	if back.Annotations[RevisionAnnotation] != "3" || back.Annotations[RevisionHistoryAnnotation] != "1" {
		t.Errorf("annotations = %v, want revision 3 with history 1", back.Annotations)
	}
	if *back.Spec.Replicas != 1 {
		t.Errorf("rolled-back replicaset replicas = %d, want 1 (maxSurge)", *back.Spec.Replicas)
	}
	if got := fx.deployment(t).Annotations[RevisionAnnotation]; got != "3" {
		t.Errorf("deployment revision = %q, want 3", got)
	}
}

func TestRevisionHistoryLimit(t *testing.T) {
	d := newDeployment(2, "v4", intstr.FromInt32(1), intstr.FromInt32(0))
	limit := int32(1)
	d.Spec.RevisionHistoryLimit = &limit
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	busy := rsFor(d, "v3", 0, 0, 3, 3*time.Hour)
	busy.Status.Replicas = 1 // still has a terminating pod: keep it
	fx := newFixture(t, d,
		rsFor(d, "v1", 0, 0, 1, 5*time.Hour), rsFor(d, "v2", 0, 0, 2, 4*time.Hour), busy,
		rsFor(d, "v4", 2, 2, 4, time.Hour))
	fx.sync(t)
	rss := fx.replicaSets(t)
	if _, ok := rss[rsName("v1")]; ok {
		t.Error("oldest replicaset kept")
	}
	if _, ok := rss[rsName("v2")]; ok {
		t.Error("second oldest replicaset kept")
	}
	if _, ok := rss[rsName("v3")]; !ok {
		t.Error("replicaset with a pod still present was deleted")
	}
}

func TestScalingAndPause(t *testing.T) {
	t.Run("a resize of a settled deployment scales its only replicaset", func(t *testing.T) {
		d := newDeployment(5, "v1", intstr.FromInt32(1), intstr.FromInt32(0))
		fx := newFixture(t, d, rsFor(newDeployment(3, "v1", intstr.FromInt32(1), intstr.FromInt32(0)), "v1", 3, 3, 1, time.Hour))
		fx.sync(t)
		if n := *fx.replicaSets(t)[rsName("v1")].Spec.Replicas; n != 5 {
			t.Errorf("replicas = %d, want 5", n)
		}
	})
	t.Run("a resize mid-rollout is spread proportionally", func(t *testing.T) {
		// 10 replicas, maxSurge 3: old 8 + new 5 = 13. Scaling to 20 (max 23) adds 10.
		prev := newDeployment(10, "v2", intstr.FromInt32(3), intstr.FromInt32(0))
		d := newDeployment(20, "v2", intstr.FromInt32(3), intstr.FromInt32(0))
		d.Status.Replicas = 13
		fx := newFixture(t, d, rsFor(prev, "v1", 8, 8, 1, time.Hour), rsFor(prev, "v2", 5, 0, 2, time.Minute))
		fx.sync(t)
		rss := fx.replicaSets(t)
		o, n := *rss[rsName("v1")].Spec.Replicas, *rss[rsName("v2")].Spec.Replicas
		if o+n != 23 || o != 14 || n != 9 {
			t.Errorf("old=%d new=%d, want 14 and 9", o, n)
		}
	})
	t.Run("a paused deployment gets no new replicaset and a DeploymentPaused condition", func(t *testing.T) {
		d := newDeployment(3, "v2", intstr.FromInt32(1), intstr.FromInt32(0))
		d.Spec.Paused = true
		fx := newFixture(t, d, rsFor(d, "v1", 3, 3, 1, time.Hour))
		fx.sync(t)
		if rss := fx.replicaSets(t); len(rss) != 1 {
			t.Errorf("replicasets = %v", keys(rss))
		}
		c := getCondition(&fx.deployment(t).Status, appsv1.DeploymentProgressing)
		if c == nil || c.Reason != PausedReason || c.Status != corev1.ConditionUnknown {
			t.Errorf("Progressing = %+v", c)
		}
	})
}

func TestComputeHash(t *testing.T) {
	a, b := template("v1"), template("v2")
	one := int32(1)
	if ComputeHash(&a, nil) != ComputeHash(&a, nil) {
		t.Error("hash is not stable")
	}
	if ComputeHash(&a, nil) == ComputeHash(&b, nil) {
		t.Error("different templates share a hash")
	}
	if ComputeHash(&a, nil) == ComputeHash(&a, &one) {
		t.Error("collisionCount does not change the hash")
	}
	for _, r := range ComputeHash(&a, nil) {
		if r == 'a' || r == 'e' || r == 'i' || r == 'o' || r == 'u' {
			t.Errorf("hash %q has a vowel", ComputeHash(&a, nil))
		}
	}
}

func keys(m map[string]*appsv1.ReplicaSet) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestDeploymentRevisionFollowsNewReplicaSetDown(t *testing.T) {
	// Exported from another cluster with its revision; here the new ReplicaSet is revision 1.
	for _, existing := range []bool{false, true} {
		t.Run(map[bool]string{false: "created", true: "existing"}[existing], func(t *testing.T) {
			d := newDeployment(3, "v1", intstr.FromInt32(1), intstr.FromInt32(0))
			d.Annotations = map[string]string{RevisionAnnotation: "7"}
			objs := []runtime.Object{d}
			if existing {
				objs = append(objs, rsFor(d, "v1", 3, 3, 1, time.Hour))
			}
			fx := newFixture(t, objs...)
			fx.sync(t)
			if rev := fx.replicaSets(t)[rsName("v1")].Annotations[RevisionAnnotation]; rev != "1" {
				t.Fatalf("new replicaset revision = %q, want 1", rev)
			}
			if got := fx.deployment(t).Annotations[RevisionAnnotation]; got != "1" {
				t.Errorf("deployment revision = %q, want 1 (the new replicaset's)", got)
			}
		})
	}
}

// enforceResourceVersion makes the fake clientset's Deployment updates (main resource and status)
// conditional on resourceVersion, as the API server's are, and bumps it on success.
func enforceResourceVersion(client *fake.Clientset) {
	client.PrependReactor("update", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.UpdateAction).GetObject().(*appsv1.Deployment)
		cur, err := client.Tracker().Get(a.GetResource(), a.GetNamespace(), obj.Name)
		if err != nil {
			return false, nil, nil
		}
		curRV := cur.(*appsv1.Deployment).ResourceVersion
		if obj.ResourceVersion != curRV {
			return true, nil, apierrors.NewConflict(a.GetResource().GroupResource(), obj.Name, fmt.Errorf("the object has been modified"))
		}
		n, _ := strconv.Atoi(curRV)
		obj.ResourceVersion = strconv.Itoa(n + 1)
		return false, nil, nil
	})
}

func TestRevisionWriteIsConditionalOnWhatTheSyncRead(t *testing.T) {
	// The cache still has generation 1 (template v1); the API server already has generation 2
	// (template v2), which this sync has not seen.
	d := newDeployment(3, "v1", intstr.FromInt32(1), intstr.FromInt32(0))
	fx := newFixture(t, d, rsFor(d, "v1", 3, 3, 1, time.Hour))
	enforceResourceVersion(fx.client)
	newer := d.DeepCopy()
	newer.Generation, newer.ResourceVersion = 2, "2"
	newer.Spec.Template = template("v2")
	if err := fx.client.Tracker().Update(appsv1.SchemeGroupVersion.WithResource("deployments"), newer, "ns"); err != nil {
		t.Fatal(err)
	}
	err := fx.c.sync(context.Background(), "ns/web")
	if !apierrors.IsConflict(err) {
		t.Errorf("sync error = %v, want a conflict (requeue)", err)
	}
	got := fx.deployment(t)
	if got.Status.ObservedGeneration >= 2 {
		t.Errorf("observedGeneration = %d: claims generation 2, whose template v2 the sync never acted on", got.Status.ObservedGeneration)
	}
	if got.Annotations[RevisionAnnotation] != "" {
		t.Errorf("revision annotation %q written over a Deployment the sync did not read", got.Annotations[RevisionAnnotation])
	}
}

func TestLegacyOwnerReferencesResolveToTheDeployment(t *testing.T) {
	for _, tc := range []struct {
		apiVersion string
		want       bool
	}{
		{"apps/v1", true},
		{"extensions/v1beta1", true},
		{"apps/v1beta1", true},
		{"apps/v1beta2", true},
		{"example.com/v1", false},
	} {
		t.Run(tc.apiVersion, func(t *testing.T) {
			d := newDeployment(3, "v1", intstr.FromInt32(1), intstr.FromInt32(0))
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
			rs := rsFor(d, "v1", 3, 3, 1, time.Hour)
			rs.OwnerReferences[0].APIVersion = tc.apiVersion
			yes := true
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns",
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}}}}
			fx := newFixture(t, d, rs, pod)

			fx.c.onReplicaSet(rs)
			if got := fx.c.queue.Len() == 1; got != tc.want {
				t.Errorf("replicaset event enqueued the deployment: %v, want %v", got, tc.want)
			}
			for fx.c.queue.Len() > 0 {
				k, _ := fx.c.queue.Get()
				fx.c.queue.Done(k)
				fx.c.queue.Forget(k)
			}
			fx.c.onPodDeleted(pod)
			if got := fx.c.queue.Len() == 1; got != tc.want {
				t.Errorf("deleted pod enqueued the Recreate deployment: %v, want %v", got, tc.want)
			}
		})
	}
}

func TestProgressingMessagesWithoutNewReplicaSet(t *testing.T) {
	// Recreate: the old replicaset is scaled down but a pod is still going, so there is no new
	// replicaset yet.
	d := newDeployment(3, "v2", intstr.FromInt32(0), intstr.FromInt32(0))
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	old := rsFor(d, "v1", 0, 0, 1, time.Hour)
	old.Status.Replicas = 1

	t.Run("progressing", func(t *testing.T) {
		d := d.DeepCopy()
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 0}
		fx := newFixture(t, d, old)
		fx.sync(t)
		c := getCondition(&fx.deployment(t).Status, appsv1.DeploymentProgressing)
		if c == nil || c.Reason != RSUpdatedReason || c.Message != `Deployment "web" is progressing.` {
			t.Errorf("Progressing = %+v, want %s with message %q", c, RSUpdatedReason, `Deployment "web" is progressing.`)
		}
	})
	t.Run("timed out", func(t *testing.T) {
		d := d.DeepCopy()
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 0,
			Conditions: []appsv1.DeploymentCondition{newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, RSUpdatedReason, "", now.Add(-11*time.Minute))}}
		fx := newFixture(t, d, old)
		fx.sync(t)
		c := getCondition(&fx.deployment(t).Status, appsv1.DeploymentProgressing)
		if c == nil || c.Reason != TimedOutReason || c.Message != `Deployment "web" has timed out progressing.` {
			t.Errorf("Progressing = %+v, want %s with message %q", c, TimedOutReason, `Deployment "web" has timed out progressing.`)
		}
	})
}

func TestTerminatingNamespaceIsQuiet(t *testing.T) {
	d := newDeployment(3, "v2", intstr.FromInt32(1), intstr.FromInt32(0))
	fx := newFixture(t, d, rsFor(d, "v1", 3, 3, 1, time.Hour))
	fx.client.PrependReactor("create", "replicasets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		// What the API server answers a create in a namespace being deleted.
		err := apierrors.NewForbidden(a.GetResource().GroupResource(), "", fmt.Errorf("unable to create new content in namespace ns because it is being terminated"))
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type: corev1.NamespaceTerminatingCause, Message: "namespace ns is being terminated", Field: "metadata.namespace"})
		return true, nil, err
	})
	if err := fx.c.sync(context.Background(), "ns/web"); err != nil {
		t.Errorf("sync = %v, want nil: no retry while the namespace terminates", err)
	}
	if ev := controllertest.Events(fx.rec.Events); len(ev) != 0 {
		t.Errorf("events = %q, want none", ev)
	}
	if c := getCondition(&fx.deployment(t).Status, appsv1.DeploymentProgressing); c != nil && c.Reason == FailedRSCreateReason {
		t.Errorf("Progressing = %+v, want no %s", c, FailedRSCreateReason)
	}
}

func TestCleanupAndProportionalScalingOrder(t *testing.T) {
	// Each case hands the ReplicaSets over in the order that the upstream order contradicts, so the
	// input order (a lister's) cannot decide.
	named := func(rs *appsv1.ReplicaSet, name string, created time.Time) *appsv1.ReplicaSet {
		rs.Name, rs.CreationTimestamp = name, metav1.NewTime(created)
		return rs
	}
	t.Run("cleanup: a revision that is not a number goes by creation", func(t *testing.T) {
		d := newDeployment(2, "v9", intstr.FromInt32(1), intstr.FromInt32(0))
		limit := int32(1)
		d.Spec.RevisionHistoryLimit = &limit
		odd := named(rsFor(d, "v1", 0, 0, 1, 0), "web-odd", now.Add(-time.Hour))
		odd.Annotations[RevisionAnnotation] = "x"
		older := named(rsFor(d, "v2", 0, 0, 2, 0), "web-older", now.Add(-5*time.Hour))
		fx := newFixture(t, d, odd, older)
		if err := fx.c.cleanup(context.Background(), d, []*appsv1.ReplicaSet{odd, older}); err != nil {
			t.Fatal(err)
		}
		rss := fx.replicaSets(t)
		if _, ok := rss["web-older"]; ok {
			t.Errorf("kept web-older (created first), have %v", keys(rss))
		}
		if _, ok := rss["web-odd"]; !ok {
			t.Errorf("deleted web-odd (created last), have %v", keys(rss))
		}
	})
	t.Run("cleanup: equal revision and creation go by name", func(t *testing.T) {
		d := newDeployment(2, "v9", intstr.FromInt32(1), intstr.FromInt32(0))
		limit := int32(1)
		d.Spec.RevisionHistoryLimit = &limit
		at := now.Add(-time.Hour)
		rd, rc := named(rsFor(d, "v1", 0, 0, 3, 0), "web-d", at), named(rsFor(d, "v2", 0, 0, 3, 0), "web-c", at)
		fx := newFixture(t, d, rd, rc)
		if err := fx.c.cleanup(context.Background(), d, []*appsv1.ReplicaSet{rd, rc}); err != nil {
			t.Fatal(err)
		}
		rss := fx.replicaSets(t)
		if _, ok := rss["web-c"]; ok || rss["web-d"] == nil {
			t.Errorf("want web-c deleted and web-d kept, have %v", keys(rss))
		}
	})
	// Two old replicasets of 2, sized for 4 replicas, created in the same second.
	prev := newDeployment(4, "v9", intstr.FromInt32(0), intstr.FromInt32(1))
	at := now.Add(-time.Hour)
	pair := func() (*appsv1.ReplicaSet, *appsv1.ReplicaSet) {
		return named(rsFor(prev, "v1", 2, 2, 1, 0), "web-a", at), named(rsFor(prev, "v2", 2, 2, 2, 0), "web-b", at)
	}
	for _, tc := range []struct {
		name         string
		replicas     int32
		order        func(a, b *appsv1.ReplicaSet) []*appsv1.ReplicaSet
		wantA, wantB int32
	}{
		{"scale up: the newer (by name) of equal replicasets gets the leftover", 5,
			func(a, b *appsv1.ReplicaSet) []*appsv1.ReplicaSet { return []*appsv1.ReplicaSet{a, b} }, 2, 3},
		{"scale down: the older (by name) of equal replicasets gives first", 3,
			func(a, b *appsv1.ReplicaSet) []*appsv1.ReplicaSet { return []*appsv1.ReplicaSet{b, a} }, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDeployment(tc.replicas, "v9", intstr.FromInt32(0), intstr.FromInt32(1))
			a, b := pair()
			fx := newFixture(t, d, a, b)
			if err := fx.c.scale(context.Background(), d, nil, tc.order(a, b)); err != nil {
				t.Fatal(err)
			}
			rss := fx.replicaSets(t)
			if ga, gb := *rss["web-a"].Spec.Replicas, *rss["web-b"].Spec.Replicas; ga != tc.wantA || gb != tc.wantB {
				t.Errorf("web-a=%d web-b=%d, want %d and %d", ga, gb, tc.wantA, tc.wantB)
			}
		})
	}
}

func TestDeprecatedRollbackToAnnotation(t *testing.T) {
	setup := func(t *testing.T, to string) (*fixture, *appsv1.Deployment) {
		d := newDeployment(3, "v2", intstr.FromInt32(1), intstr.FromInt32(0))
		d.Annotations = map[string]string{RevisionAnnotation: "2", ChangeCauseAnnotation: "edit", RollbackToAnnotation: to}
		v1, v2 := rsFor(d, "v1", 0, 0, 1, time.Hour), rsFor(d, "v2", 3, 3, 2, time.Minute)
		v1.Annotations[ChangeCauseAnnotation] = "create"
		v2.Annotations[ChangeCauseAnnotation] = "edit"
		fx := newFixture(t, d, v1, v2)
		fx.sync(t)
		return fx, fx.deployment(t)
	}
	events := func(fx *fixture, reason string) []string {
		var out []string
		for _, e := range controllertest.Events(fx.rec.Events) {
			if strings.Contains(e, " "+reason+" ") {
				out = append(out, e)
			}
		}
		return out
	}
	for _, to := range []string{"1", "0"} {
		t.Run("to revision "+to, func(t *testing.T) {
			fx, got := setup(t, to)
			if _, ok := got.Annotations[RollbackToAnnotation]; ok {
				t.Errorf("rollback annotation kept: %v", got.Annotations)
			}
			want := template("v1")
			if !equalIgnoreHash(&got.Spec.Template, &want) || got.Spec.Template.Labels[PodTemplateHashLabel] != "" {
				t.Errorf("template = %+v, want revision 1's without %s", got.Spec.Template, PodTemplateHashLabel)
			}
			if got.Annotations[ChangeCauseAnnotation] != "create" || got.Annotations[RevisionAnnotation] != "2" {
				t.Errorf("annotations = %v, want revision 1's change-cause and the revision kept", got.Annotations)
			}
			if ev := events(fx, RollbackDone); len(ev) != 1 || ev[0] != `Normal DeploymentRollback Rolled back deployment "web" to revision 1` {
				t.Errorf("events = %q", ev)
			}
			if n := *fx.replicaSets(t)[rsName("v1")].Spec.Replicas; n != 0 {
				t.Errorf("revision 1's replicaset scaled to %d in the rollback sync; the next sync rolls out", n)
			}
		})
	}
	for _, tc := range []struct{ to, event string }{
		{"5", `Warning DeploymentRollbackRevisionNotFound Unable to find the revision to rollback to.`},
		{"2", `Warning DeploymentRollbackTemplateUnchanged The rollback revision contains the same template as current deployment "web"`},
	} {
		t.Run("to revision "+tc.to+" leaves the template", func(t *testing.T) {
			fx, got := setup(t, tc.to)
			if _, ok := got.Annotations[RollbackToAnnotation]; ok {
				t.Errorf("rollback annotation kept: %v", got.Annotations)
			}
			want := template("v2")
			if !equalIgnoreHash(&got.Spec.Template, &want) || got.Annotations[ChangeCauseAnnotation] != "edit" {
				t.Errorf("deployment changed: template %+v annotations %v", got.Spec.Template, got.Annotations)
			}
			reason := strings.Fields(tc.event)[1]
			if ev := events(fx, reason); len(ev) != 1 || ev[0] != tc.event {
				t.Errorf("events = %q, want %q", ev, tc.event)
			}
		})
	}
	t.Run("to the previous revision without one", func(t *testing.T) {
		d := newDeployment(3, "v1", intstr.FromInt32(1), intstr.FromInt32(0))
		d.Annotations = map[string]string{RollbackToAnnotation: "0"}
		fx := newFixture(t, d, rsFor(d, "v1", 3, 3, 1, time.Hour))
		fx.sync(t)
		if _, ok := fx.deployment(t).Annotations[RollbackToAnnotation]; ok {
			t.Error("rollback annotation kept")
		}
		if ev := events(fx, RollbackRevisionNotFound); len(ev) != 1 || ev[0] != `Warning DeploymentRollbackRevisionNotFound Unable to find last revision.` {
			t.Errorf("events = %q", ev)
		}
	})
}

func TestPausedDeploymentKeepsHistoryForAPendingRollback(t *testing.T) {
	d := newDeployment(3, "v2", intstr.FromInt32(1), intstr.FromInt32(0))
	d.Spec.Paused = true
	limit := int32(0)
	d.Spec.RevisionHistoryLimit = &limit
	d.Annotations = map[string]string{RollbackToAnnotation: "1"}
	fx := newFixture(t, d, rsFor(d, "v1", 0, 0, 1, time.Hour), rsFor(d, "v2", 3, 3, 2, time.Minute))
	fx.sync(t)
	if _, ok := fx.replicaSets(t)[rsName("v1")]; !ok {
		t.Error("revision 1, which the pending rollback names, was pruned while paused")
	}
	if fx.deployment(t).Annotations[RollbackToAnnotation] != "1" {
		t.Error("a paused deployment's rollback was settled; it waits for resume")
	}
}

// Kubernetes' FindOldReplicaSets works on the ReplicaSets sorted oldest first (FindNewReplicaSet
// sorts them in place), so the old ones are visited in creation order whatever order the lister
// gave: Recreate scales them down, and records its events, oldest first.
func TestOldReplicaSetsGoOldestFirst(t *testing.T) {
	d := newDeployment(3, "v3", intstr.FromInt32(0), intstr.FromInt32(0))
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	older, newer := rsFor(d, "v1", 2, 2, 1, 2*time.Hour), rsFor(d, "v2", 1, 1, 2, time.Hour)
	fx := newFixture(t, d, older, newer)
	if err := fx.c.rolloutRecreate(context.Background(), d, []*appsv1.ReplicaSet{newer, older}); err != nil {
		t.Fatal(err)
	}
	ev := controllertest.Events(fx.rec.Events)
	want := []string{
		fmt.Sprintf("Normal ScalingReplicaSet Scaled down replica set %s from 2 to 0", older.Name),
		fmt.Sprintf("Normal ScalingReplicaSet Scaled down replica set %s from 1 to 0", newer.Name),
	}
	if strings.Join(ev, "\n") != strings.Join(want, "\n") {
		t.Errorf("events = %q, want %q", ev, want)
	}
}

// getReplicaFailures in Kubernetes: the new ReplicaSet's ReplicaFailure wins; otherwise the first
// old ReplicaSet's that has one, in creation order.
func TestReplicaFailureComesFromTheNewThenTheOldestReplicaSet(t *testing.T) {
	failing := func(rs *appsv1.ReplicaSet, msg string) *appsv1.ReplicaSet {
		rs.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
			Reason: "FailedCreate", Message: msg, LastTransitionTime: metav1.NewTime(now)}}
		return rs
	}
	d := newDeployment(3, "v3", intstr.FromInt32(0), intstr.FromInt32(1))
	for _, tc := range []struct {
		name    string
		newFail bool
		want    string
	}{
		{"the new replicaset's failure first", true, "new"},
		{"else the oldest old replicaset's", false, "oldest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oldest := failing(rsFor(d, "v1", 1, 0, 1, 3*time.Hour), "oldest")
			middle := failing(rsFor(d, "v2", 1, 0, 2, 2*time.Hour), "middle")
			n := rsFor(d, "v3", 1, 0, 3, time.Hour)
			if tc.newFail {
				n = failing(n, "new")
			}
			// Both orders, so neither the caller's nor a lister's order decides.
			for _, all := range [][]*appsv1.ReplicaSet{{oldest, middle, n}, {n, middle, oldest}} {
				fx := newFixture(t, d, oldest, middle, n)
				if err := fx.c.syncRolloutStatus(context.Background(), all, n, d.DeepCopy()); err != nil {
					t.Fatal(err)
				}
				c := getCondition(&fx.deployment(t).Status, appsv1.DeploymentReplicaFailure)
				if c == nil || c.Message != tc.want {
					t.Errorf("ReplicaFailure = %+v, want the %s replicaset's", c, tc.want)
				}
			}
		})
	}
}

// A saturated new ReplicaSet (adopted, say) makes scale drop every active old one. Kubernetes' scale
// has just sorted the old ReplicaSets newest first (FindActiveOrLatest sorts the slice it is given),
// so they go, and their events come, in that order.
func TestSaturatedScaleDropsOldReplicaSetsNewestFirst(t *testing.T) {
	d := newDeployment(3, "v3", intstr.FromInt32(1), intstr.FromInt32(0))
	older, newer := rsFor(d, "v1", 2, 2, 1, 3*time.Hour), rsFor(d, "v2", 1, 1, 2, 2*time.Hour)
	n := rsFor(d, "v3", 3, 3, 3, time.Hour)
	fx := newFixture(t, d, older, newer, n)
	if err := fx.c.scale(context.Background(), d, n, []*appsv1.ReplicaSet{older, newer}); err != nil {
		t.Fatal(err)
	}
	ev := controllertest.Events(fx.rec.Events)
	want := []string{
		fmt.Sprintf("Normal ScalingReplicaSet Scaled down replica set %s from 1 to 0", newer.Name),
		fmt.Sprintf("Normal ScalingReplicaSet Scaled down replica set %s from 2 to 0", older.Name),
	}
	if strings.Join(ev, "\n") != strings.Join(want, "\n") {
		t.Errorf("events = %q, want %q", ev, want)
	}
}
