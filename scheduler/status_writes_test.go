package scheduler

import (
	"slices"
	"testing"
	"time"
)

// TestStatusWritesLandInAttemptOrder: an older attempt's write that would
// run after a newer attempt's has begun is skipped; writes that do not
// overlap all run, in order.
func TestStatusWritesLandInAttemptOrder(t *testing.T) {
	var w statusWrites
	var done []string
	record := func(s string) func() { return func() { done = append(done, s) } }

	p1, s1 := w.begin("default/p")
	p2, s2 := w.begin("default/p")
	w.write("default/p", p2, s2, record("second"))
	w.write("default/p", p1, s1, record("first"))
	if !slices.Equal(done, []string{"second"}) {
		t.Fatalf("writes = %v, want only the second attempt's", done)
	}
	if len(w.pods) != 0 {
		t.Fatalf("%d pods still tracked after their writes", len(w.pods))
	}

	done = nil
	p3, s3 := w.begin("default/p")
	w.write("default/p", p3, s3, record("third"))
	p4, s4 := w.begin("default/p")
	w.write("default/p", p4, s4, record("fourth"))
	if !slices.Equal(done, []string{"third", "fourth"}) {
		t.Fatalf("writes = %v, want third then fourth", done)
	}
}

// TestBindingSupersedesStatusWrites: a failed attempt's PodScheduled=False
// write still queued when a later attempt binds the pod is skipped, and
// one running is waited for, so none lands after the binding.
func TestBindingSupersedesStatusWrites(t *testing.T) {
	var w statusWrites
	p, seq := w.begin("default/p")
	w.supersede("default/p")
	ran := false
	w.write("default/p", p, seq, func() { ran = true })
	if ran {
		t.Fatal("a write queued before the binding ran after it")
	}
	if len(w.pods) != 0 {
		t.Fatalf("%d pods still tracked after their writes", len(w.pods))
	}

	p, seq = w.begin("default/p")
	started, release, written := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go w.write("default/p", p, seq, func() {
		close(started)
		<-release
		close(written)
	})
	<-started
	superseded := make(chan struct{})
	go func() {
		w.supersede("default/p")
		close(superseded)
	}()
	select {
	case <-superseded:
		t.Fatal("the binding went ahead while an earlier write was running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-superseded
	select {
	case <-written:
	default:
		t.Fatal("supersede returned before the running write finished")
	}
	w.supersede("default/q") // a pod with no writes: nothing to wait for
}
