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

// PopulateResult says how the creates of Populate went.
type PopulateResult struct {
	// Keys are all the keys Populate wrote, in order.
	Keys []string
	// Retried counts creates that failed and were tried again.
	Retried int
	// ExistsOnFirstTry lists keys whose very first create was answered
	// "already exists" although nothing had written them before: a wrong
	// answer from the store.
	ExistsOnFirstTry []string
	// ExistsOnRetry lists keys taken as written because a retry after a
	// failed create said "already exists".
	ExistsOnRetry []string
}

// Populate creates keys prefix<first>…prefix<first+n-1> (zero-padded) with
// 1 KiB values using workers concurrent writers. A failed create is retried
// (a retry that reports "exists" is taken to mean the failed attempt had
// been committed); the caller lists the keys afterwards to check.
func Populate(ctx context.Context, t target.Target, prefix string, first, n, workers int) (PopulateResult, error) {
	var next atomic.Int64
	next.Store(int64(first))
	end := int64(first + n)
	value := Value(n)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		res    PopulateResult
		failed error
	)
	res.Keys = make([]string, n)
	for i := range n {
		res.Keys[i] = fmt.Sprintf("%s%08d", prefix, first+i)
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= end {
					return
				}
				key := res.Keys[i-int64(first)]
				var err error
				for attempt := 0; attempt < 5; attempt++ {
					_, err = t.Create(ctx, key, value)
					if err == nil {
						break
					}
					exists := errors.Is(err, target.ErrKeyExists)
					mu.Lock()
					if attempt == 0 && exists {
						res.ExistsOnFirstTry = append(res.ExistsOnFirstTry, key)
					}
					if attempt > 0 && exists {
						res.ExistsOnRetry = append(res.ExistsOnRetry, key)
						mu.Unlock()
						err = nil
						break
					}
					res.Retried++
					mu.Unlock()
					time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
				}
				if err != nil {
					mu.Lock()
					if failed == nil {
						failed = fmt.Errorf("populate %s: %w", key, err)
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if failed != nil {
		return res, failed
	}
	return res, ctx.Err()
}

// ListResult is the outcome of repeated full lists of one prefix.
type ListResult struct {
	Keys    int
	Latency Stats
}

// ListLatency lists prefix (one request, every key with its value) once to
// warm up and check that exactly want keys come back, then repeatedly for at
// least d and at least minRuns times. want < 0 skips the count check.
func ListLatency(ctx context.Context, t target.Target, prefix string, want int, d time.Duration, minRuns int) (ListResult, error) {
	n, err := t.List(ctx, prefix)
	if err != nil {
		return ListResult{}, fmt.Errorf("list %s: %w", prefix, err)
	}
	if want >= 0 && n != want {
		return ListResult{}, fmt.Errorf("list %s returned %d keys, want %d", prefix, n, want)
	}
	want = n
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
