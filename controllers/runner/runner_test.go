package runner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

func TestObject(t *testing.T) {
	pod := &corev1.Pod{}
	if got, ok := Object[*corev1.Pod](pod); !ok || got != pod {
		t.Fatal("a pod is not a pod")
	}
	if got, ok := Object[*corev1.Pod](cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}); !ok || got != pod {
		t.Fatal("the pod inside a tombstone was not found")
	}
	if _, ok := Object[*corev1.Pod](&corev1.Node{}); ok {
		t.Fatal("a node was taken for a pod")
	}
	if _, ok := Object[*corev1.Pod](cache.DeletedFinalStateUnknown{Key: "n", Obj: &corev1.Node{}}); ok {
		t.Fatal("a node in a tombstone was taken for a pod")
	}
}
