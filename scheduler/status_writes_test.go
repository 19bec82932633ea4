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
	record := func(s string) func(nomination) { return func(nomination) { done = append(done, s) } }

	p1, s1 := w.begin("default/p", keepNomination)
	p2, s2 := w.begin("default/p", keepNomination)
	w.write("default/p", p2, s2, record("second"))
	w.write("default/p", p1, s1, record("first"))
	if !slices.Equal(done, []string{"second"}) {
		t.Fatalf("writes = %v, want only the second attempt's", done)
	}
	if len(w.pods) != 0 {
		t.Fatalf("%d pods still tracked after their writes", len(w.pods))
	}

	done = nil
	p3, s3 := w.begin("default/p", keepNomination)
	w.write("default/p", p3, s3, record("third"))
	p4, s4 := w.begin("default/p", keepNomination)
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
	p, seq := w.begin("default/p", keepNomination)
	w.supersede("default/p")
	ran := false
	w.write("default/p", p, seq, func(nomination) { ran = true })
	if ran {
		t.Fatal("a write queued before the binding ran after it")
	}
	if len(w.pods) != 0 {
		t.Fatalf("%d pods still tracked after their writes", len(w.pods))
	}

	p, seq = w.begin("default/p", keepNomination)
	started, release, written := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go w.write("default/p", p, seq, func(nomination) {
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

// TestSkippedWritesKeepTheirNomination: the nominated node of a write that
// is skipped (a later attempt began its own, or a binding came first) is
// carried by the next write that runs, or handed to the binding, so the
// pod shows it as kube-scheduler's would; a nomination written once is not
// written again.
func TestSkippedWritesKeepTheirNomination(t *testing.T) {
	var w statusWrites
	var got []nomination
	record := func(nom nomination) { got = append(got, nom) }
	onX := nomination{override: true, node: "x"}

	p1, s1 := w.begin("default/p", onX)
	p2, s2 := w.begin("default/p", keepNomination)
	w.write("default/p", p2, s2, record)
	w.write("default/p", p1, s1, record)
	p3, s3 := w.begin("default/p", keepNomination)
	w.write("default/p", p3, s3, record)
	if want := []nomination{onX, keepNomination}; !slices.Equal(got, want) {
		t.Fatalf("writes carried %v, want %v", got, want)
	}

	got = nil
	p4, s4 := w.begin("default/p", onX)
	p5, s5 := w.begin("default/p", clearNomination)
	if nom, ok := w.supersede("default/p"); !ok || nom != clearNomination {
		t.Fatalf("binding got %v %v, want the latest nomination, a clearing", nom, ok)
	}
	w.write("default/p", p5, s5, record)
	w.write("default/p", p4, s4, record)
	if len(got) != 0 {
		t.Fatalf("writes %v ran after the binding", got)
	}
	if nom, ok := w.supersede("default/p"); ok {
		t.Fatalf("a second binding got %v again", nom)
	}
	if len(w.pods) != 0 {
		t.Fatalf("%d pods still tracked after their writes", len(w.pods))
	}
}
