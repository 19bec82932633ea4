package scheduler

import (
	"slices"
	"testing"
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
