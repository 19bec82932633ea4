package workload

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/skiffkube/skiff/bench/target"
)

// WatchResult is the outcome of a watch latency run.
type WatchResult struct {
	// Sent counts acknowledged writes; Received the ones whose event arrived.
	Sent, Received int
	// Duplicates counts events seen more than once (should be zero).
	Duplicates int
	// WriteErrors counts writes that failed (not expected to produce events).
	WriteErrors int
	Latency     Stats
}

// Missing is the number of acknowledged writes whose event never arrived.
func (r WatchResult) Missing() int { return r.Sent - r.Received }

// WatchLatency measures how long a write made through writer takes to be
// delivered as an event to a watch opened through watcher (another instance
// on the same database, or the same one). It writes rate new keys per second
// for d, timing each from just before the write is issued to the moment the
// watcher's callback sees it, then waits up to grace for late events.
func WatchLatency(ctx context.Context, writer, watcher target.Target, prefix string, rate float64, d, grace time.Duration) (WatchResult, error) {
	var (
		mu       sync.Mutex
		sent     = map[string]time.Time{}
		seen     = map[string]bool{}
		lat      []time.Duration
		dups     int
		arrivals = make(chan struct{}, 1)
	)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wait, err := watcher.Watch(wctx, prefix, func(key string) {
		now := time.Now()
		mu.Lock()
		if seen[key] {
			dups++
		} else {
			seen[key] = true
			if t0, ok := sent[key]; ok {
				lat = append(lat, now.Sub(t0))
			}
		}
		mu.Unlock()
		select {
		case arrivals <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return WatchResult{}, fmt.Errorf("start watch: %w", err)
	}

	// Warm up: one write whose event must arrive proves the path works
	// before anything is timed (and is not counted).
	warm := prefix + "warmup"
	if _, err := writer.Create(ctx, warm, Value(1)); err != nil {
		return WatchResult{}, fmt.Errorf("warm-up write: %w", err)
	}
	if err := waitFor(ctx, arrivals, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seen[warm]
	}); err != nil {
		return WatchResult{}, fmt.Errorf("warm-up event never arrived: %w", err)
	}

	res := WatchResult{}
	value := Value(2)
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	end := time.Now().Add(d)
	for i := 0; time.Now().Before(end); i++ {
		key := fmt.Sprintf("%s%08d", prefix, i)
		mu.Lock()
		sent[key] = time.Now()
		mu.Unlock()
		if _, err := writer.Create(ctx, key, value); err != nil {
			res.WriteErrors++
			mu.Lock()
			delete(sent, key)
			mu.Unlock()
		} else {
			res.Sent++
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return WatchResult{}, ctx.Err()
		}
	}
	_ = waitFor(ctx, arrivals, grace, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(lat) >= res.Sent
	})
	cancel()
	if err := wait(); err != nil {
		return WatchResult{}, fmt.Errorf("watch ended: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	res.Received = len(lat)
	res.Duplicates = dups
	res.Latency = Summarize(lat)
	return res, nil
}

// waitFor polls cond each time signal fires (and every 50 ms) until it holds
// or timeout passes.
func waitFor(ctx context.Context, signal <-chan struct{}, timeout time.Duration, cond func() bool) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-signal:
		case <-time.After(50 * time.Millisecond):
		case <-deadline.C:
			return fmt.Errorf("not within %v", timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
