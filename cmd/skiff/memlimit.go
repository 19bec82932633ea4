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
// at 1,000 nodes too (their RSS target is 500 MB); instead a gcAllowance
// lifts it where the collector's CPU shows it is needed, and a large cluster
// may set a floor of its own.
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
	"/gc/heap/goal:bytes",
}

// newSamples is a runtime/metrics sample slice for names.
func newSamples(names []string) []metrics.Sample {
	s := make([]metrics.Sample, len(names))
	for i, name := range names {
		s[i].Name = name
	}
	return s
}

// memoryUse is what the runtime reports of its memory: the live heap, the
// memory it holds outside the heap (what the memory limit counts besides
// heap spans) and the heap size the running collection cycle aims to end
// at, which the limit holds down when it binds.
type memoryUse struct{ live, nonHeap, goal int64 }

// headroom is how much the heap may grow between two collections: the
// collector's CPU share falls in proportion as it grows.
func (m memoryUse) headroom() int64 { return max(0, m.goal-m.live) }

func readMemory(sample []metrics.Sample) memoryUse {
	v := readSamples(sample)
	live, goal := int64(v[0]), int64(v[6])
	nonHeap := max(0, int64(v[1])-int64(v[2])-int64(v[3])-int64(v[4])-int64(v[5]))
	return memoryUse{live: live, nonHeap: nonHeap, goal: goal}
}

// readSamples reads sample and returns its values by position, counts and
// byte sizes as float64 (exact below 2^53) and times as they are.
func readSamples(sample []metrics.Sample) []float64 {
	metrics.Read(sample)
	v := make([]float64, len(sample))
	for i := range sample {
		switch sample[i].Value.Kind() {
		case metrics.KindFloat64:
			v[i] = sample[i].Value.Float64()
		case metrics.KindUint64:
			v[i] = float64(sample[i].Value.Uint64())
		}
	}
	return v
}

// cpuSamples are the runtime's CPU estimates gcAllowance judges by: the
// collector's CPU time and the part of it spent marking on otherwise idle
// processors, and the CPU time available to the process and the part of it
// left idle; and the number of collections ended. The runtime updates the
// estimates together when a collection ends, so their deltas between two
// readings cover the same span: from one collection's end to another's.
var cpuSamples = []string{
	"/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/gc/mark/idle:cpu-seconds",
	"/cpu/classes/total:cpu-seconds",
	"/cpu/classes/idle:cpu-seconds",
	"/gc/cycles/total:gc-cycles",
}

// cpuUse is the process' cumulative CPU time as the runtime estimates it:
// the collector's, and all that the process used (the collector's included),
// and the collections ended. Marking on idle processors is left out of both
// times: it takes nothing from the server's work, and counting it would make
// a lightly loaded server's collector look expensive.
type cpuUse struct {
	gc, used float64
	cycles   uint64
}

func readCPU(sample []metrics.Sample) cpuUse {
	v := readSamples(sample)
	return cpuUse{gc: v[0] - v[1], used: v[2] - v[3] - v[1], cycles: uint64(v[4])}
}

// gcAllowance is memory the limit grants beyond gcMemoryLimit while the
// collector takes more than its budget of the CPU the server uses. With a
// limit that binds, each collection marks the whole live heap and every
// goroutine stack, so the collector's cost grows with the heap while its
// headroom does not: at 5,000 hollow nodes (300 MB live, 250 MB of stacks,
// 85 MB of headroom) it took half the server's CPU with no pods at all. The
// floor and the 1,000-node memory target stay as they are as long as the
// collector keeps within its budget; past it, memory gives way to CPU, but
// no more memory than the budget needs: the collector's share falls in
// proportion as its headroom grows (it collects that much less often for
// the same allocation), so a share just over the budget earns a small step
// and one far over it a large one.
type gcAllowance struct {
	budget float64 // the collector's share of the used CPU; 0 grants nothing
	extra  int64   // granted now

	last   cpuUse // at the last decision
	primed bool
	ticks  int // updates since the last decision
}

const (
	// allowanceWindow is the fewest updates (seconds) a decision spans.
	allowanceWindow = 3
	// allowanceCycles is the fewest collections a decision spans, unless
	// allowanceQuiet updates pass first. The CPU estimates move only when a
	// collection ends, so a window of one or two long collections (at 5,000
	// hollow nodes each marks for a second or more) measures where their
	// ends fell more than the collector's share: windows of 3 s swung
	// between 13% and 49% under a steady load.
	allowanceCycles = 4
	// allowanceQuiet is how many updates without a finished collection
	// make the allowance shrink: the server allocates little.
	allowanceQuiet = 30
	// allowanceMinCPU is the CPU time per update under which the collector's
	// share is not judged (a nearly idle server): the allowance only shrinks.
	allowanceMinCPU = 0.05
	// allowanceMinStep is the least the allowance grows by.
	allowanceMinStep = 8 << 20
)

// update takes the runtime's CPU estimates and memory, once a second, and
// returns the allowance. It decides once at least allowanceWindow updates
// have passed and allowanceCycles collections have ended since the last
// decision (or one has, and allowanceQuiet updates have passed): a
// collector over budget grows the allowance by what brings its share back
// to the budget, the headroom times the share's excess over it (at least
// allowanceMinStep, at most a quarter of the live heap per decision and the
// live heap in all: beyond that GOGC's own pacing binds first); one under
// half its budget, or a server nearly idle, shrinks it by a quarter; in
// between it holds, so that it does not swing back and forth.
func (a *gcAllowance) update(now cpuUse, mem memoryUse) int64 {
	if !a.primed {
		a.last, a.primed = now, true
		return a.extra
	}
	a.ticks++
	gc, used, cycles := now.gc-a.last.gc, now.used-a.last.used, now.cycles-a.last.cycles
	switch {
	case cycles == 0 && a.ticks >= allowanceQuiet:
		a.shrink()
	case used <= 0, a.ticks < allowanceWindow, cycles < allowanceCycles && a.ticks < allowanceQuiet:
		return a.extra // too few collections have ended to judge by
	case a.budget <= 0:
		a.extra = 0
	case used >= allowanceMinCPU*float64(a.ticks) && gc > a.budget*used:
		excess := gc/(a.budget*used) - 1
		step := min(max(int64(float64(mem.headroom())*excess), allowanceMinStep), max(mem.live/4, allowanceMinStep))
		a.extra = min(a.extra+step, max(mem.live, allowanceMinStep))
	case used < allowanceMinCPU*float64(a.ticks) || gc < a.budget*used/2:
		a.shrink()
	}
	a.last, a.ticks = now, 0
	return a.extra
}

func (a *gcAllowance) shrink() {
	a.extra -= a.extra / 4
	if a.extra < allowanceMinStep {
		a.extra = 0
	}
}

// keepGCMemoryLimit applies gcMemoryLimit to the runtime's live heap, plus
// the gcAllowance that gcBudget (the collector's share of the used CPU; 0
// for none) earns, every second until ctx ends.
func keepGCMemoryLimit(ctx context.Context, floor int64, gcBudget float64, log *slog.Logger) {
	sample, cpu := newSamples(memorySamples), newSamples(cpuSamples)
	allowance := &gcAllowance{budget: gcBudget}
	set, granted := int64(-1), int64(0)
	// At once, then every second.
	wait.UntilWithContext(ctx, func(context.Context) {
		mem := readMemory(sample)
		extra := allowance.update(readCPU(cpu), mem)
		// Rare, and worth an operator's notice: the server holds more
		// memory than its limit's rule gives, or stops doing so.
		switch {
		case extra > 0 && granted == 0:
			log.Info("garbage collector over its CPU budget: raising the Go soft memory limit", "allowance", extra, "budget", gcBudget, "live", mem.live)
		case extra == 0 && granted > 0:
			log.Info("garbage collector within its CPU budget: the Go soft memory limit is back to its rule", "live", mem.live)
		}
		granted = extra
		if limit := gcMemoryLimit(floor, mem.live, mem.nonHeap) + extra; limit != set {
			debug.SetMemoryLimit(limit)
			if set < 0 {
				log.Info("Go soft memory limit set", "floor", floor, "limit", limit)
			}
			set = limit
		}
	}, time.Second)
}
