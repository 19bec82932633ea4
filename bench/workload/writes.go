package workload

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/skiffkube/skiff/bench/target"
)

// ValueSize is the size of every value written: a typical small Kubernetes
// object (a ConfigMap or a Pod's status) is about one kibibyte of JSON.
const ValueSize = 1024

// Value returns a ValueSize-byte JSON document, so neither store can profit
// from compressing repetitive bytes more than it would on real objects.
func Value(seed int) []byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	head := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bench-%d"},"data":{"v":"`, seed)
	tail := `"}}`
	var b strings.Builder
	b.Grow(ValueSize)
	b.WriteString(head)
	x := uint32(seed)*2654435761 + 1
	for b.Len() < ValueSize-len(tail) {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b.WriteByte(alphabet[x%uint32(len(alphabet))])
	}
	b.WriteString(tail)
	return []byte(b.String())
}

// WriteResult is the outcome of a timed write run.
type WriteResult struct {
	Writers int
	// Ops counts acknowledged writes; Errors failed ones.
	Ops    int
	Errors int
	// FirstErr is the first failure seen, for the report.
	FirstErr error
	Elapsed  time.Duration
	Latency  Stats
	// Present is how many of the run's keys a list finds afterwards (-1 if
	// that check was not made). Fewer than Ops means acknowledged writes
	// were lost; more means some writes reported as failed were committed.
	Present int
}

// Lost is the number of acknowledged creates that are not there afterwards.
func (r WriteResult) Lost() int {
	if r.Present < 0 || r.Present >= r.Ops {
		return 0
	}
	return r.Ops - r.Present
}

// PerSecond is acknowledged writes per second of wall time.
func (r WriteResult) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// Creates runs writers goroutines for d, each creating new keys
// prefix/w<i>/<n> with 1 KiB values one after another, as an apiserver
// does for a burst of new objects. Afterwards (untimed) it lists prefix to
// check that every acknowledged create is really there.
func Creates(ctx context.Context, t target.Target, prefix string, writers int, d time.Duration) WriteResult {
	value := Value(writers)
	res := run(ctx, writers, d, func(ctx context.Context, w int) func() error {
		n := 0
		return func() error {
			n++
			_, err := t.Create(ctx, fmt.Sprintf("%sw%03d/%09d", prefix, w, n), value)
			return err
		}
	})
	res.Present = -1
	if keys, err := t.ListKeys(ctx, prefix); err == nil {
		res.Present = len(keys)
	}
	return res
}

// CASUpdates runs writers goroutines for d, each first creating its own key
// and then updating it again and again with compare-and-swap on the revision
// it last wrote — the pattern of controllers writing status. The creates are
// not counted.
func CASUpdates(ctx context.Context, t target.Target, prefix string, writers int, d time.Duration) (WriteResult, error) {
	value := Value(writers + 1000)
	revs := make([]int64, writers)
	for w := range writers {
		rev, err := t.Create(ctx, fmt.Sprintf("%sw%03d", prefix, w), value)
		if err != nil {
			return WriteResult{}, fmt.Errorf("create key for writer %d: %w", w, err)
		}
		revs[w] = rev
	}
	return run(ctx, writers, d, func(ctx context.Context, w int) func() error {
		key := fmt.Sprintf("%sw%03d", prefix, w)
		return func() error {
			rev, err := t.Update(ctx, key, value, revs[w])
			if err == nil {
				revs[w] = rev
			}
			return err
		}
	}), nil
}

// run starts writers goroutines that call their op back to back until d has
// passed, and measures each call.
func run(ctx context.Context, writers int, d time.Duration, newOp func(ctx context.Context, w int) func() error) WriteResult {
	type part struct {
		lat    []time.Duration
		errors int
		first  error
	}
	parts := make([]part, writers)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for w := range writers {
		op := newOp(ctx, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &parts[w]
			for ctx.Err() == nil && time.Now().Before(deadline) {
				t0 := time.Now()
				if err := op(); err != nil {
					p.errors++
					if p.first == nil {
						p.first = err
					}
					continue
				}
				p.lat = append(p.lat, time.Since(t0))
			}
		}()
	}
	wg.Wait()
	res := WriteResult{Writers: writers, Elapsed: time.Since(start), Present: -1}
	var all []time.Duration
	for _, p := range parts {
		all = append(all, p.lat...)
		res.Errors += p.errors
		if res.FirstErr == nil {
			res.FirstErr = p.first
		}
	}
	res.Ops = len(all)
	res.Latency = Summarize(all)
	return res
}
