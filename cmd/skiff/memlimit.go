package main

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// gcMemoryLimit is the soft memory limit the server keeps for a live heap:
// floor, or half again the live heap when that is more. Below the floor
// the garbage collector keeps its default headroom (GOGC=100 lets the heap
// reach twice what is live) until the process nears the floor; above it the
// headroom never shrinks below half the live heap, so a heap that outgrows
// the floor costs at most the GC work of GOGC=50, never a collector that
// runs without pause against a limit the live heap alone exceeds.
func gcMemoryLimit(floor, live int64) int64 { return max(floor, live+live/2) }

// keepGCMemoryLimit applies gcMemoryLimit to the runtime's live heap every
// second until ctx ends.
func keepGCMemoryLimit(ctx context.Context, floor int64, log *slog.Logger) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	set := int64(-1)
	apply := func() {
		metrics.Read(sample)
		var live int64
		if sample[0].Value.Kind() == metrics.KindUint64 {
			live = int64(sample[0].Value.Uint64())
		}
		if limit := gcMemoryLimit(floor, live); limit != set {
			debug.SetMemoryLimit(limit)
			if set < 0 {
				log.Info("Go soft memory limit set", "floor", floor, "limit", limit)
			}
			set = limit
		}
	}
	apply()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			apply()
		}
	}
}
