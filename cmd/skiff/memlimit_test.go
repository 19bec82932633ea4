package main

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestGCMemoryLimitIsTheFloorOrHalfAgainTheLiveHeap(t *testing.T) {
	for _, c := range []struct{ floor, live, nonHeap, want int64 }{
		{400 << 20, 0, 0, 400 << 20},
		{400 << 20, 200 << 20, 50 << 20, 400 << 20},
		{400 << 20, 300 << 20, 0, 450 << 20}, // never under half the live heap as headroom
		{400 << 20, 1 << 30, 0, 3 << 29},
		// Stacks and runtime memory come on top: without them the limit
		// would sit under what the process holds with no garbage at all.
		{400 << 20, 800 << 20, 600 << 20, 1800 << 20},
	} {
		if got := gcMemoryLimit(c.floor, c.live, c.nonHeap); got != c.want {
			t.Errorf("gcMemoryLimit(%d, %d, %d) = %d, want %d", c.floor, c.live, c.nonHeap, got, c.want)
		}
	}
}

// What the runtime holds outside the heap includes goroutine stacks.
func TestReadMemoryCountsStacks(t *testing.T) {
	sample := newSamples(memorySamples)
	before := readMemory(sample).nonHeap
	stop := make(chan struct{})
	for i := 0; i < 2000; i++ {
		go func() {
			var deep func(n int) int
			deep = func(n int) int {
				var pad [512]byte
				if n == 0 {
					<-stop
					return int(pad[0])
				}
				return deep(n-1) + int(pad[n%512])
			}
			deep(16) // about 8 KiB of stack each
		}()
	}
	time.Sleep(200 * time.Millisecond)
	m := readMemory(sample)
	live, after := m.live, m.nonHeap
	close(stop)
	if after-before < 8<<20 {
		t.Errorf("2,000 goroutines with ~8 KiB stacks: non-heap memory grew by %d bytes, want at least 8 MiB", after-before)
	}
	if live <= 0 {
		t.Errorf("live heap %d", live)
	}
}

// The keeper sets the runtime's limit from the real live heap, raises it
// when the live heap grows past two thirds of the floor, and stops with ctx.
func TestKeepGCMemoryLimitFollowsTheLiveHeap(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	floor := int64(64 << 20)
	go func() { keepGCMemoryLimit(ctx, floor, 0, slog.New(slog.NewTextHandler(io.Discard, nil))); close(done) }()
	waitLimit := func(ok func(int64) bool) int64 {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if l := debug.SetMemoryLimit(-1); ok(l) {
				return l
			}
			if time.Now().After(deadline) {
				t.Fatalf("memory limit stayed %d", debug.SetMemoryLimit(-1))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitLimit(func(l int64) bool { return l == floor })
	// 96 MiB kept live: the limit must rise to at least 144 MiB.
	ballast := make([][]byte, 96)
	for i := range ballast {
		ballast[i] = make([]byte, 1<<20)
		ballast[i][0] = 1
	}
	runtime.GC()
	l := waitLimit(func(l int64) bool { return l >= 144<<20 })
	runtime.KeepAlive(ballast)
	cancel()
	<-done
	t.Logf("limit with 96 MiB live: %d MiB", l>>20)
}

// The allowance grows while the collector is over its budget of the used
// CPU, by what brings its share back to the budget if the headroom grows in
// proportion, up to the live heap; it holds inside the band and shrinks
// under half the budget or on an idle server; a zero budget grants nothing.
func TestGCAllowanceFollowsTheCollectorsShareOfTheCPU(t *testing.T) {
	const live = 400 << 20
	mem := memoryUse{live: live, goal: live + 40<<20} // 40 MiB of headroom
	a := &gcAllowance{budget: 0.3}
	var now cpuUse
	// window spends used CPU seconds per second for a decision window,
	// share of them in the collector, with a collection ending each
	// second, and returns the allowance.
	window := func(used, share float64) int64 {
		var extra int64
		for i := 0; i < max(allowanceWindow, allowanceCycles); i++ {
			now.used += used
			now.gc += used * share
			now.cycles++
			extra = a.update(now, mem)
		}
		return extra
	}
	a.update(now, mem) // primes
	if got, want := window(1, 0.45), int64(20<<20); got != want {
		t.Fatalf("half again the budget: allowance %d, want half the headroom %d", got, want)
	}
	if got, want := window(1, 0.33), int64(28<<20); got != want {
		t.Fatalf("a tenth over the budget: allowance %d, want the least step more, %d", got, want)
	}
	if got, want := window(1, 0.9), int64(28<<20+80<<20); got != want {
		t.Fatalf("three times the budget: allowance %d, want twice the headroom more, %d", got, want)
	}
	mem.goal = live + 200<<20
	if got, want := window(1, 0.9), int64(108<<20+live/4); got != want {
		t.Fatalf("three times the budget with 200 MiB of headroom: allowance %d, want a quarter of the live heap more, %d", got, want)
	}
	for i := 0; i < 10; i++ {
		window(1, 0.9)
	}
	if got := window(1, 0.9); got != live {
		t.Fatalf("long over budget: allowance %d, want the live heap %d at most", got, live)
	}
	if got := window(1, 0.2); got != live {
		t.Fatalf("within the band (20%% of a 30%% budget): allowance %d, want it held at %d", got, live)
	}
	if got := window(1, 0.1); got != live-live/4 {
		t.Fatalf("under half the budget: allowance %d, want %d", got, live-live/4)
	}
	if got := window(0, 0); got != live-live/4 {
		t.Fatalf("no CPU used in a window: allowance %d, want it held at %d", got, live-live/4)
	}
	for i := 0; i < 30; i++ {
		window(0.01, 0.9) // nearly idle: the collector's share says nothing
	}
	if got := window(0.01, 0.9); got != 0 {
		t.Fatalf("idle server: allowance %d, want it gone", got)
	}

	// Too few collections to judge by: a window of three seconds with one
	// long collection over budget decides nothing until allowanceCycles
	// have ended, or allowanceQuiet seconds have passed.
	a = &gcAllowance{budget: 0.3}
	a.update(now, mem)
	for i := 0; i < allowanceWindow; i++ {
		now.used++
		now.gc += 0.9
		if i == 0 {
			now.cycles++
		}
		if got := a.update(now, mem); got != 0 {
			t.Fatalf("one collection in %d s: allowance %d, want none yet", i+1, got)
		}
	}
	for i := allowanceWindow; i < allowanceQuiet-1; i++ {
		if got := a.update(now, mem); got != 0 {
			t.Fatalf("one collection in %d s: allowance %d, want none yet", i+1, got)
		}
	}
	if got := a.update(now, mem); got == 0 {
		t.Fatalf("one collection over budget in %d s: no allowance", allowanceQuiet)
	}

	a.extra = live
	for i := 0; i < allowanceQuiet; i++ {
		a.update(now, mem) // no collection at all
	}
	if got := a.extra; got != live-live/4 {
		t.Fatalf("%d seconds without a collection: allowance %d, want %d", allowanceQuiet, got, live-live/4)
	}

	off := &gcAllowance{}
	now = cpuUse{}
	off.update(now, mem)
	for i := 0; i < max(allowanceWindow, allowanceCycles); i++ {
		now.used++
		now.gc += 0.5
		now.cycles++
		if got := off.update(now, mem); got != 0 {
			t.Fatalf("no budget: allowance %d", got)
		}
	}
}

// The runtime's CPU counters are read: the collector's share of what the
// process used, after a forced collection, is above zero.
func TestReadCPUSeesTheCollector(t *testing.T) {
	cpu := newSamples(cpuSamples)
	before := readCPU(cpu)
	ballast := make([][]byte, 64)
	for i := range ballast {
		ballast[i] = make([]byte, 1<<20)
	}
	for i := 0; i < 5; i++ {
		runtime.GC()
	}
	runtime.KeepAlive(ballast)
	after := readCPU(cpu)
	if after.gc <= before.gc || after.used <= before.used || after.gc > after.used || after.cycles < before.cycles+5 {
		t.Errorf("CPU use before %+v after %+v: want the collector's time to grow, within the used time, by five collections", before, after)
	}
}
