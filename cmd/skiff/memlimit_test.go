package main

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
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
	sample := make([]metrics.Sample, len(memorySamples))
	for i, name := range memorySamples {
		sample[i].Name = name
	}
	_, before := readMemory(sample)
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
	live, after := readMemory(sample)
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
	go func() { keepGCMemoryLimit(ctx, floor, slog.New(slog.NewTextHandler(io.Discard, nil))); close(done) }()
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
