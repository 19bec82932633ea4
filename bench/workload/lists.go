package workload

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffkube/skiff/bench/target"
)

// Populate creates keys prefix<first>…prefix<first+n-1> (zero-padded) with
// 1 KiB values using workers concurrent writers. A failed create is retried
// (a create that reports "exists" on retry had succeeded), because the list
// measurement needs exactly n keys.
func Populate(ctx context.Context, t target.Target, prefix string, first, n, workers int) error {
	var next atomic.Int64
	next.Store(int64(first))
	end := int64(first + n)
	value := Value(n)
	var wg sync.WaitGroup
	var once sync.Once
	var failed error
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= end {
					return
				}
				key := fmt.Sprintf("%s%08d", prefix, i)
				var err error
				for attempt := 0; attempt < 5; attempt++ {
					_, err = t.Create(ctx, key, value)
					if err == nil || (attempt > 0 && errors.Is(err, target.ErrKeyExists)) {
						err = nil
						break
					}
					time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
				}
				if err != nil {
					once.Do(func() { failed = fmt.Errorf("populate %s: %w", key, err) })
					return
				}
			}
		}()
	}
	wg.Wait()
	if failed != nil {
		return failed
	}
	return ctx.Err()
}

// ListResult is the outcome of repeated full lists of one prefix.
type ListResult struct {
	Keys    int
	Latency Stats
}

// ListLatency lists prefix (one request, every key with its value) once to
// warm up and check that exactly want keys come back, then repeatedly for at
// least d and at least minRuns times.
func ListLatency(ctx context.Context, t target.Target, prefix string, want int, d time.Duration, minRuns int) (ListResult, error) {
	n, err := t.List(ctx, prefix)
	if err != nil {
		return ListResult{}, fmt.Errorf("list %s: %w", prefix, err)
	}
	if n != want {
		return ListResult{}, fmt.Errorf("list %s returned %d keys, want %d", prefix, n, want)
	}
	var lat []time.Duration
	start := time.Now()
	for len(lat) < minRuns || time.Since(start) < d {
		if err := ctx.Err(); err != nil {
			return ListResult{}, err
		}
		t0 := time.Now()
		n, err := t.List(ctx, prefix)
		el := time.Since(t0)
		if err != nil {
			return ListResult{}, fmt.Errorf("list %s: %w", prefix, err)
		}
		if n != want {
			return ListResult{}, fmt.Errorf("list %s returned %d keys, want %d", prefix, n, want)
		}
		lat = append(lat, el)
	}
	return ListResult{Keys: want, Latency: Summarize(lat)}, nil
}
