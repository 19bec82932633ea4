package runner

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
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

// A failing key is dropped after MaxRetries retries by Run's workers, and
// kept by RunRetryingForever's.
func TestRetryPolicies(t *testing.T) {
	fail := func(context.Context, string) error { return errors.New("API server away") }
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name       string
		maxRetries int
		kept       bool
	}{{"bounded", MaxRetries, false}, {"forever", -1, true}} {
		// No backoff delay, so that the retries run back to back.
		q := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemFastSlowRateLimiter[string](0, 0, 0))
		q.Add("ns/key")
		for i := 0; i < 3*MaxRetries && q.Len() > 0; i++ {
			processNext(context.Background(), tc.name, q, fail, tc.maxRetries, log)
		}
		if kept := q.Len() == 1; kept != tc.kept {
			t.Errorf("%s: key still queued after %d failures = %v, want %v", tc.name, 3*MaxRetries, kept, tc.kept)
		}
		q.ShutDown()
	}
}
