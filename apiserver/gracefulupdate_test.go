package apiserver_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// TestWriteDuringPodGracePeriod: a pod in its grace period (deletionTimestamp,
// deletionGracePeriodSeconds > 0) without finalizers stays through writes, as
// in Kubernetes, whose store deletes on update only an object whose deletion
// left no grace period (shouldDeleteDuringUpdate); the kubelet's final status,
// a label, or the last finalizer's removal must not end the grace period early.
// Only once the grace period is 0 does a write leaving no finalizer delete it.
func TestWriteDuringPodGracePeriod(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	// terminating makes a pod bound to n1, with the given finalizers, and
	// starts its deletion with the given grace period.
	terminating := func(t *testing.T, name string, finalizers []string, grace int64) *corev1.Pod {
		t.Helper()
		p := testPod(name)
		p.Finalizers = finalizers
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(grace)}); err != nil {
			t.Fatal(err)
		}
		cur, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil || cur.DeletionTimestamp == nil {
			t.Fatalf("pod %s after delete: %v %+v", name, err, cur)
		}
		return cur
	}
	finalStatus := func(cs *kubernetes.Clientset, p *corev1.Pod) error {
		p.Status.Phase = corev1.PodFailed
		_, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	}
	for _, tc := range []struct {
		name       string
		pod        string
		finalizers []string
		grace      int64
		write      func(*corev1.Pod) error
		wantGone   bool
	}{
		{name: "status in grace period", pod: "status", grace: 30, write: func(p *corev1.Pod) error { return finalStatus(cs, p) }},
		{name: "label in grace period", pod: "label", grace: 30, write: func(p *corev1.Pod) error {
			_, err := pods.Patch(ctx, p.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{})
			return err
		}},
		{name: "last finalizer removed in grace period", pod: "finalizer", finalizers: []string{"example.com/f"}, grace: 30, write: func(p *corev1.Pod) error {
			_, err := pods.Patch(ctx, p.Name, types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{})
			return err
		}},
		{name: "last finalizer removed after grace 0", pod: "finalizer-grace-0", finalizers: []string{"example.com/f"}, grace: 0, wantGone: true, write: func(p *corev1.Pod) error {
			_, err := pods.Patch(ctx, p.Name, types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.pod
			p := terminating(t, name, tc.finalizers, tc.grace)
			if err := tc.write(p); err != nil {
				t.Fatalf("write: %v", err)
			}
			cur, err := pods.Get(ctx, name, metav1.GetOptions{})
			if tc.wantGone {
				if !apierrors.IsNotFound(err) {
					t.Errorf("after the write: %v, want NotFound", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("after the write: %v, want the pod still terminating", err)
			}
			if cur.DeletionGracePeriodSeconds == nil || *cur.DeletionGracePeriodSeconds != tc.grace {
				t.Errorf("deletionGracePeriodSeconds %v, want %d", cur.DeletionGracePeriodSeconds, tc.grace)
			}
			// The kubelet's last word: grace 0 removes it.
			if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
				t.Fatal(err)
			}
			if _, err := pods.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("after grace 0: %v, want NotFound", err)
			}
		})
	}
}

// The kubelet's end of a graceful deletion, with its node's own credentials
// (node authorizer, NodeRestriction): its final status write keeps the pod,
// and its grace-0 delete, with the pod's UID as precondition, removes it. The
// delete used to find the pod already gone with its status write and was
// refused (no relationship between the node and a pod it cannot find).
func TestNodeEndsItsPodsGracefulDeletion(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	admin := clientsetFor(t, srv.Config)
	n1 := clientsetFor(t, srv.UserConfig(t, "system:node:n1", "system:nodes"))
	p := testPod("graceful")
	p.Spec.NodeName = "n1"
	p, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](30)}); err != nil {
		t.Fatal(err)
	}
	// The node sees the deletion, stops the containers and reports how the pod ended.
	cur, err := n1.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil || cur.DeletionTimestamp == nil {
		t.Fatalf("the node reads its pod being deleted: %v %+v", err, cur)
	}
	cur.Status.Phase = corev1.PodFailed
	if _, err := n1.CoreV1().Pods("default").UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("the node's final status: %v", err)
	}
	if _, err := admin.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("after the final status: %v, want the pod still there", err)
	}
	uid := cur.UID
	if err := n1.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0),
		Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		t.Fatalf("the node's grace-0 delete: %v", err)
	}
	if _, err := admin.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after the node's delete: %v, want NotFound", err)
	}
}
