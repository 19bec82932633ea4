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

// warnCounter counts the records logged at Warn.
type warnCounter struct {
	slog.Handler
	warns *int
}

func (h warnCounter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		*h.warns++
	}
	return nil
}

// A key that keeps failing is told at Warn after warnEvery failures in a row,
// and again every warnEvery, not only when it is dropped: a controller that
// retries forever would otherwise never say it is stuck.
func TestPersistentFailuresAreWarned(t *testing.T) {
	fail := func(context.Context, string) error { return errors.New("API server away") }
	for _, tc := range []struct {
		name       string
		maxRetries int
		failures   int
		warns      int
	}{
		{"bounded: one at 10 failures, one when dropped", MaxRetries, MaxRetries + 1, 2},
		{"forever: one every 10", -1, 45, 4},
		{"short: none", -1, warnEvery - 1, 0},
	} {
		warns := 0
		log := slog.New(warnCounter{slog.NewTextHandler(io.Discard, nil), &warns})
		q := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemFastSlowRateLimiter[string](0, 0, 0))
		q.Add("ns/key")
		for i := 0; i < tc.failures && q.Len() > 0; i++ {
			processNext(context.Background(), tc.name, q, fail, tc.maxRetries, log)
		}
		if warns != tc.warns {
			t.Errorf("%s: %d warnings after %d failures, want %d", tc.name, warns, tc.failures, tc.warns)
		}
		q.ShutDown()
	}
}
