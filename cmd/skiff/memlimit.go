package main

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// gcMemoryLimit is the soft memory limit the server keeps: floor, or half
// again the live heap plus what the runtime holds besides the heap, when
// that is more. Below the floor the garbage collector keeps its default
// headroom (GOGC=100 lets the heap reach twice what is live) until the
// process nears the floor; above it the heap may grow by half the live heap
// less its fragmentation (free slots in in-use spans, which the limit counts
// and nonHeap leaves out): at 5,000 hollow nodes 130 MB of a 470 MB heap,
// leaving ~50 MB of headroom and ~40% of the server's CPU to the collector.
// Counting the fragmentation in nonHeap would lift the limit over the floor
// at 1,000 nodes too (their RSS target is 500 MB); a large cluster sets a
// floor of its own instead.
//
// The limit counts all the runtime's memory — goroutine stacks (thousands
// of node connections hold hundreds of MB of them), GC metadata, buffers —
// so leaving that out would set a limit the process exceeds with no garbage
// at all, and the collector would run without pause (seen at 5,000 hollow
// nodes: 6 pods/s instead of 106).
func gcMemoryLimit(floor, live, nonHeap int64) int64 { return max(floor, live+live/2+nonHeap) }

// memorySamples are what gcMemoryLimit needs of runtime/metrics.
var memorySamples = []string{
	"/gc/heap/live:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
}

// readMemory returns the live heap and the memory the runtime holds outside
// the heap (what the memory limit counts besides heap spans).
func readMemory(sample []metrics.Sample) (live, nonHeap int64) {
	metrics.Read(sample)
	v := make([]int64, len(sample))
	for i := range sample {
		if sample[i].Value.Kind() == metrics.KindUint64 {
			v[i] = int64(sample[i].Value.Uint64())
		}
	}
	return v[0], max(0, v[1]-v[2]-v[3]-v[4]-v[5])
}

// keepGCMemoryLimit applies gcMemoryLimit to the runtime's live heap every
// second until ctx ends.
func keepGCMemoryLimit(ctx context.Context, floor int64, log *slog.Logger) {
	sample := make([]metrics.Sample, len(memorySamples))
	for i, name := range memorySamples {
		sample[i].Name = name
	}
	set := int64(-1)
	// At once, then every second.
	wait.UntilWithContext(ctx, func(context.Context) {
		live, nonHeap := readMemory(sample)
		if limit := gcMemoryLimit(floor, live, nonHeap); limit != set {
			debug.SetMemoryLimit(limit)
			if set < 0 {
				log.Info("Go soft memory limit set", "floor", floor, "limit", limit)
			}
			set = limit
		}
	}, time.Second)
}
