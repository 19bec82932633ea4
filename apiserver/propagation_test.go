package apiserver_test

import (
	"context"
	"strings"
	"testing"

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
