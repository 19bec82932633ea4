package runtime

import (
	"context"
	goruntime "runtime"
	"sync"
	"sync/atomic"
)

// parallelize calls fn(i) for i in [0, n) on up to workers goroutines,
// handing out indexes in small chunks so that uneven work balances. It stops
// handing out work once ctx is done.
//
// Filter, Score and preemption's dry run never block, so goroutines beyond
// GOMAXPROCS cannot run at the same time and only cost their start and
// scheduling: the workers are capped there, and the calling goroutine is one
// of them. The chunk size
// still follows the requested workers, so early stops stay as prompt.
func parallelize(ctx context.Context, workers, n int, fn func(i int)) {
	if n <= 0 {
		return
	}
	if workers < 1 {
		workers = 1
	}
	chunk := n / (workers * 4)
	if chunk < 1 {
		chunk = 1
	}
	workers = min(workers, goruntime.GOMAXPROCS(0), (n+chunk-1)/chunk)
	if workers == 1 {
		for i := 0; i < n && ctx.Err() == nil; i++ {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	work := func() {
		for ctx.Err() == nil {
			start := int(next.Add(int64(chunk))) - chunk
			if start >= n {
				return
			}
			end := min(start+chunk, n)
			for i := start; i < end; i++ {
				fn(i)
			}
		}
	}
	var wg sync.WaitGroup
	wg.Add(workers - 1)
	for w := 1; w < workers; w++ {
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
}
