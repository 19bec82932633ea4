package metrics

import (
	"runtime"
	"testing"
)

// The garbage collector's cost and the memory it works against are on
// /metrics: an SRE weighing --gc-memory-limit needs both.
func TestGarbageCollectorCostIsExported(t *testing.T) {
	runtime.GC() // the CPU classes are updated at the end of a cycle
	families, err := New().reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				got[f.GetName()] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				got[f.GetName()] = m.GetGauge().GetValue()
			}
		}
	}
	for _, name := range []string{"go_cpu_classes_gc_total_cpu_seconds_total", "go_gc_heap_live_bytes", "go_memory_classes_heap_unused_bytes", "go_goroutines", "process_cpu_seconds_total"} {
		if _, ok := got[name]; !ok {
			t.Errorf("%s not exported", name)
		}
	}
	if got["go_gc_heap_live_bytes"] <= 0 {
		t.Errorf("go_gc_heap_live_bytes = %v after a GC", got["go_gc_heap_live_bytes"])
	}
}
