package runtime

import (
	"context"
	"sync"
	"sync/atomic"
)

// parallelize calls fn(i) for i in [0, n) on up to workers goroutines,
// handing out indexes in small chunks so that uneven work balances. It stops
// handing out work once ctx is done.
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
	if workers > (n+chunk-1)/chunk {
		workers = (n + chunk - 1) / chunk
	}
	if workers == 1 {
		for i := 0; i < n && ctx.Err() == nil; i++ {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add(workers)
	for w := 0; w < workers; w++ {
		go func() {
			defer wg.Done()
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
		}()
	}
	wg.Wait()
}
