package apiserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A delete's propagation policy replaces the one an earlier delete (or the
// object's creator) recorded, as Kubernetes' deletionFinalizersForGarbageCollection
// does: a foreground delete stuck on a dependent can be finished with
// --cascade=background, and the orphan and foregroundDeletion finalizers are
// never both set.
func TestDeletePropagationReplacesTheRecordedPolicy(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("default")
	create := func(name string, finalizers ...string) {
		t.Helper()
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	del := func(name string, opts metav1.DeleteOptions) {
		t.Helper()
		if err := cms.Delete(ctx, name, opts); err != nil {
			t.Fatal(err)
		}
	}
	finalizers := func(name string) string {
		t.Helper()
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return "gone"
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(cm.Finalizers, ",")
	}
	foreground := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}
	background := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}
	orphan := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}

	create("stuck")
	del("stuck", foreground)
	if got := finalizers("stuck"); got != metav1.FinalizerDeleteDependents {
		t.Fatalf("foreground delete: finalizers %q", got)
	}
	del("stuck", background)
	if got := finalizers("stuck"); got != "gone" {
		t.Errorf("background delete after a foreground one: finalizers %q, want the object gone", got)
	}

	create("switched", "example.com/keep")
	del("switched", foreground)
	del("switched", orphan)
	if got := finalizers("switched"); got != "example.com/keep,"+metav1.FinalizerOrphanDependents {
		t.Errorf("orphan delete after a foreground one: finalizers %q", got)
	}
	// No policy given: the recorded one stays.
	del("switched", metav1.DeleteOptions{})
	if got := finalizers("switched"); got != "example.com/keep,"+metav1.FinalizerOrphanDependents {
		t.Errorf("delete without a policy: finalizers %q", got)
	}
	// orphanDependents=false is background.
	del("switched", metav1.DeleteOptions{OrphanDependents: ptr.To(false)})
	if got := finalizers("switched"); got != "example.com/keep" {
		t.Errorf("orphanDependents=false: finalizers %q", got)
	}

	// Created with the orphan finalizer, deleted in background: its dependents go.
	create("born-orphaning", metav1.FinalizerOrphanDependents)
	del("born-orphaning", background)
	if got := finalizers("born-orphaning"); got != "gone" {
		t.Errorf("background delete of an object created orphaning: finalizers %q", got)
	}

	create("both")
	err := cms.Delete(ctx, "both", metav1.DeleteOptions{OrphanDependents: ptr.To(true), PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "orphanDependents and deletionPropagation cannot be both set") {
		t.Errorf("orphanDependents with propagationPolicy: %v, want 422", err)
	}

	// Events have no dependents: no finalizer holds them.
	ev, err := cs.CoreV1().Events("default").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "ev"},
		InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "default", Name: "both"}, Reason: "Test", Type: corev1.EventTypeNormal}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Events("default").Delete(ctx, ev.Name, foreground); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Events("default").Get(ctx, ev.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("event deleted in foreground: %v, want it gone", err)
	}
}

// A negative grace period is one second, as in Kubernetes, not an immediate delete.
func TestNegativeGracePeriodIsOneSecond(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	pod := testPod("graceful")
	pod.Spec.NodeName = "n1"
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods("default").Delete(ctx, "graceful", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](-5)}); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().Pods("default").Get(ctx, "graceful", metav1.GetOptions{})
	if err != nil || got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != 1 {
		t.Fatalf("pod after a delete with grace -5: %v, %v", err, got.DeletionGracePeriodSeconds)
	}
}

// The start of a deletion is a new generation for objects that count them,
// as in Kubernetes: controllers watching observedGeneration see the change.
// A later delete of the same object does not bump it again.
func TestDeletionBumpsGeneration(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	deps := cs.AppsV1().Deployments("default")
	labels := map[string]string{"app": "gen"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "gen"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	if _, err := deps.Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	foreground := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}
	for i := 0; i < 2; i++ {
		if err := deps.Delete(ctx, "gen", foreground); err != nil {
			t.Fatal(err)
		}
		got, err := deps.Get(ctx, "gen", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Generation != 2 {
			t.Errorf("after delete %d: generation %d, want 2", i+1, got.Generation)
		}
	}

	// Objects without generations keep none.
	cms := cs.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "nogen", Finalizers: []string{"example.com/keep"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "nogen", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := cms.Get(ctx, "nogen", metav1.GetOptions{}); err != nil || got.Generation != 0 {
		t.Errorf("configmap after delete: %v, generation %d, want 0", err, got.Generation)
	}
}

// A shorter grace period counts from when the deletion began, as in
// Kubernetes: 30 s then 10 s moves the deadline 20 s earlier.
func TestShorterGracePeriodCountsFromTheFirstDelete(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	pod := testPod("shortened")
	pod.Spec.NodeName = "n1"
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "shortened", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](30)}); err != nil {
		t.Fatal(err)
	}
	first, err := pods.Get(ctx, "shortened", metav1.GetOptions{})
	if err != nil || first.DeletionTimestamp == nil {
		t.Fatalf("after the first delete: %v, %v", err, first)
	}
	time.Sleep(1100 * time.Millisecond) // a deadline counted from now would differ
	if err := pods.Delete(ctx, "shortened", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](10)}); err != nil {
		t.Fatal(err)
	}
	second, err := pods.Get(ctx, "shortened", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := first.DeletionTimestamp.Add(-20 * time.Second)
	if !second.DeletionTimestamp.Time.Equal(want) || *second.DeletionGracePeriodSeconds != 10 {
		t.Errorf("after shortening to 10 s: deletionTimestamp %v grace %d, want %v and 10", second.DeletionTimestamp, *second.DeletionGracePeriodSeconds, want)
	}
}

// The deprecated orphanDependents=false is answered 202 Accepted while the
// object stays, as Kubernetes does; other deletes that keep it are 200.
func TestOrphanDependentsFalseIsAccepted(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	code := func(name string, opts metav1.DeleteOptions) int {
		t.Helper()
		var c int
		err := cs.CoreV1().RESTClient().Delete().Namespace("default").Resource("configmaps").Name(name).Body(&opts).Do(ctx).StatusCode(&c).Error()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, name := range []string{"kept", "kept2", "gone"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if name != "gone" {
			cm.Finalizers = []string{"example.com/keep"}
		}
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if c := code("kept", metav1.DeleteOptions{OrphanDependents: ptr.To(false)}); c != 202 {
		t.Errorf("orphanDependents=false, object kept: %d, want 202", c)
	}
	if c := code("kept2", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); c != 200 {
		t.Errorf("foreground, object kept: %d, want 200", c)
	}
	if c := code("gone", metav1.DeleteOptions{OrphanDependents: ptr.To(false)}); c != 200 {
		t.Errorf("orphanDependents=false, object gone: %d, want 200", c)
	}
}
