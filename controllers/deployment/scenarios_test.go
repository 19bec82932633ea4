package deployment

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A Deployment of 10 (maxSurge 25%: 3) half way through a rolling update, old 8 and new 5, is
// scaled to 20 (maxSurge 5, 25 at most): the 12 more are spread over both ReplicaSets in
// proportion to their size (Kubernetes' scale and getReplicaSetFraction), not all given to the new.
func TestScaleMidRolloutIsProportional(t *testing.T) {
	prev := newDeployment(10, "v2", intstr.FromString("25%"), intstr.FromString("25%"))
	d := newDeployment(20, "v2", intstr.FromString("25%"), intstr.FromString("25%"))
	d.Status.Replicas = 13
	fx := newFixture(t, d, rsFor(prev, "v1", 8, 8, 1, time.Hour), rsFor(prev, "v2", 5, 2, 2, time.Minute))
	fx.sync(t)
	rss := fx.replicaSets(t)
	o, n := rss[rsName("v1")], rss[rsName("v2")]
	// old: 8*25/13 = 15.4 -> 15; new: 5*25/13 = 9.6 -> 10.
	if *o.Spec.Replicas != 15 || *n.Spec.Replicas != 10 {
		t.Errorf("old=%d new=%d, want 15 and 10", *o.Spec.Replicas, *n.Spec.Replicas)
	}
	for _, rs := range []*appsv1.ReplicaSet{o, n} {
		if rs.Annotations[DesiredReplicasAnnotation] != "20" || rs.Annotations[MaxReplicasAnnotation] != "25" {
			t.Errorf("%s annotations = %v, want desired 20 and max 25", rs.Name, rs.Annotations)
		}
	}
}

// Recreate: an old pod that is being deleted (its ReplicaSet no longer counts it) still holds its
// resources, so the new ReplicaSet is not created until it is gone (Kubernetes' oldPodsRunning).
func TestRecreateWaitsForTerminatingOldPods(t *testing.T) {
	d := newDeployment(3, "v2", intstr.FromInt32(0), intstr.FromInt32(0))
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	old := rsFor(d, "v1", 0, 0, 1, time.Hour)
	old.Status.Replicas = 0
	yes := true
	gone := metav1.NewTime(now.Add(-time.Second))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "old-pod", Namespace: "ns", Labels: map[string]string{"app": "web"}, DeletionTimestamp: &gone,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: old.Name, UID: old.UID, Controller: &yes}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	fx := newFixture(t, d, old, pod)
	fx.sync(t)
	if rss := fx.replicaSets(t); len(rss) != 1 {
		t.Fatalf("new replicaset created while an old pod terminates: %v", keys(rss))
	}
}

// A paused Deployment that is scaled mid-rollout scales its ReplicaSets proportionally, keeps its
// DeploymentPaused condition and never times out, however long it has been paused.
func TestPausedDeploymentScalesProportionallyWithoutTimingOut(t *testing.T) {
	prev := newDeployment(10, "v2", intstr.FromInt32(3), intstr.FromInt32(0))
	d := newDeployment(20, "v2", intstr.FromInt32(3), intstr.FromInt32(0))
	d.Spec.Paused = true
	paused := newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, PausedReason, "Deployment is paused", now.Add(-time.Hour))
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 13, UpdatedReplicas: 5, ReadyReplicas: 8, AvailableReplicas: 8,
		Conditions: []appsv1.DeploymentCondition{paused}}
	fx := newFixture(t, d, rsFor(prev, "v1", 8, 8, 1, time.Hour), rsFor(prev, "v2", 5, 0, 2, time.Minute))
	fx.sync(t)
	rss := fx.replicaSets(t)
	if o, n := *rss[rsName("v1")].Spec.Replicas, *rss[rsName("v2")].Spec.Replicas; o != 14 || n != 9 {
		t.Errorf("old=%d new=%d, want 14 and 9", o, n)
	}
	c := getCondition(&fx.deployment(t).Status, appsv1.DeploymentProgressing)
	if c == nil || c.Reason != PausedReason || c.Status != corev1.ConditionUnknown {
		t.Errorf("Progressing = %+v, want %s", c, PausedReason)
	}
	if fx.c.queue.Len() != 0 {
		t.Errorf("paused deployment requeued for a progress check")
	}
}

// revisionHistoryLimit 0 keeps no old ReplicaSet once the rollout is complete.
func TestRevisionHistoryLimitZero(t *testing.T) {
	d := newDeployment(2, "v3", intstr.FromInt32(1), intstr.FromInt32(0))
	limit := int32(0)
	d.Spec.RevisionHistoryLimit = &limit
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	fx := newFixture(t, d, rsFor(d, "v1", 0, 0, 1, 3*time.Hour), rsFor(d, "v2", 0, 0, 2, 2*time.Hour), rsFor(d, "v3", 2, 2, 3, time.Hour))
	fx.sync(t)
	rss := fx.replicaSets(t)
	if len(rss) != 1 || rss[rsName("v3")] == nil {
		t.Errorf("replicasets = %v, want only the new one", keys(rss))
	}
}

// Going back to a template used twice before reuses its ReplicaSet under a new revision, and its
// revision-history lists both earlier ones.
func TestTemplateBackToAnOldOneReusesItsReplicaSet(t *testing.T) {
	d := newDeployment(3, "v1", intstr.FromInt32(1), intstr.FromInt32(0))
	d.Annotations = map[string]string{RevisionAnnotation: "4"}
	back := rsFor(d, "v1", 0, 0, 3, 2*time.Hour)
	back.Annotations[RevisionHistoryAnnotation] = "1"
	fx := newFixture(t, d, back, rsFor(d, "v2", 3, 3, 4, time.Hour))
	fx.sync(t)
	rss := fx.replicaSets(t)
	if len(rss) != 2 {
		t.Fatalf("replicasets = %v, want the two existing ones", keys(rss))
	}
	got := rss[rsName("v1")]
	if got.Annotations[RevisionAnnotation] != "5" || got.Annotations[RevisionHistoryAnnotation] != "1,3" {
		t.Errorf("annotations = %v, want revision 5 with history 1,3", got.Annotations)
	}
	if rev := fx.deployment(t).Annotations[RevisionAnnotation]; rev != "5" {
		t.Errorf("deployment revision = %q, want 5", rev)
	}
}

// The Deployment's own annotations go to its new ReplicaSet, but not kubectl's last-applied
// configuration nor the deployment.kubernetes.io annotations the controller keeps itself.
func TestAnnotationsCopiedToTheNewReplicaSet(t *testing.T) {
	d := newDeployment(3, "v1", intstr.FromInt32(1), intstr.FromInt32(0))
	d.Annotations = map[string]string{
		"team": "a", ChangeCauseAnnotation: "kubectl apply", LastAppliedAnnotation: "{}",
		RevisionAnnotation: "9", RevisionHistoryAnnotation: "1,2", DesiredReplicasAnnotation: "99", MaxReplicasAnnotation: "99",
	}
	fx := newFixture(t, d)
	fx.sync(t)
	rs := fx.replicaSets(t)[rsName("v1")]
	want := map[string]string{"team": "a", ChangeCauseAnnotation: "kubectl apply", RevisionAnnotation: "1",
		DesiredReplicasAnnotation: "3", MaxReplicasAnnotation: "4"}
	if len(rs.Annotations) != len(want) {
		t.Errorf("annotations = %v, want %v", rs.Annotations, want)
	}
	for k, v := range want {
		if rs.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q (all: %v)", k, rs.Annotations[k], v, rs.Annotations)
		}
	}

	// Annotated later: the existing new ReplicaSet gets it too.
	d2 := fx.deployment(t)
	d2.Annotations["owner"] = "b"
	fx2 := newFixture(t, d2, rs)
	fx2.sync(t)
	if got := fx2.replicaSets(t)[rsName("v1")].Annotations["owner"]; got != "b" {
		t.Errorf("owner annotation on the existing replicaset = %q, want b", got)
	}
}

// A ReplicaSet of another template already has the new one's name: collisionCount goes up and the
// next sync creates the ReplicaSet under the hash that count gives (Kubernetes' getNewReplicaSet).
func TestHashCollisionBumpsCollisionCount(t *testing.T) {
	d := newDeployment(3, "v1", intstr.FromInt32(1), intstr.FromInt32(0))
	squatter := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: rsName("v1"), Namespace: "ns", UID: "uid-squatter", Labels: map[string]string{"app": "other"}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "other"}}}},
	}
	fx := newFixture(t, d, squatter)
	if err := fx.c.sync(context.Background(), "ns/web"); err == nil {
		t.Fatal("sync succeeded over a hash collision; want an error and a retry")
	}
	got := fx.deployment(t)
	if got.Status.CollisionCount == nil || *got.Status.CollisionCount != 1 {
		t.Fatalf("collisionCount = %v, want 1", got.Status.CollisionCount)
	}
	fx2 := newFixture(t, got, squatter)
	fx2.sync(t)
	tmpl := template("v1")
	want := "web-" + ComputeHash(&tmpl, got.Status.CollisionCount)
	rs := fx2.replicaSets(t)[want]
	if rs == nil {
		t.Fatalf("replicasets = %v, want %s", keys(fx2.replicaSets(t)), want)
	}
	if h := rs.Labels[PodTemplateHashLabel]; "web-"+h != want || rs.Spec.Selector.MatchLabels[PodTemplateHashLabel] != h || rs.Spec.Template.Labels[PodTemplateHashLabel] != h {
		t.Errorf("pod-template-hash not the collision-adjusted one: %v", rs.Labels)
	}
}
