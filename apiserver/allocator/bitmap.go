package allocator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"sync"

	"github.com/skiffkube/skiff/storage"
)

// Errors callers turn into API statuses.
var (
	// ErrFull: every item of the range is allocated.
	ErrFull = errors.New("range is full")
	// ErrAllocated: the requested item is already in use.
	ErrAllocated = errors.New("provided value is already allocated")
	// ErrNotInRange: the requested item is outside the range.
	ErrNotInRange = errors.New("provided value is not in the valid range")
)

// record is the stored form of a range.
type record struct {
	Range string `json:"range"`
	// Data is the bitmap of used offsets, as a big-endian integer.
	Data []byte `json:"data"`
}

// bitmap allocates offsets [0, size) of a range stored under key.
//
// Concurrent changes in one process are grouped: the first caller becomes the
// leader and applies every request queued meanwhile in one compare-and-swap,
// so a burst of Service creations costs a few writes, not one each (and does
// not collide with itself on the key's revision).
type bitmap struct {
	store *storage.Store
	key   string
	rng   string // the range's text, stored to detect a changed configuration
	size  int

	mu      sync.Mutex
	pending []*change
	running bool
}

type change struct {
	f    func(used *big.Int) error // must leave used untouched when it fails
	done chan error
}

func newBitmap(store *storage.Store, key, rng string, size int) *bitmap {
	return &bitmap{store: store, key: key, rng: rng, size: size}
}

// update applies f to the bitmap and stores the result.
func (b *bitmap) update(ctx context.Context, f func(used *big.Int) error) error {
	c := &change{f: f, done: make(chan error, 1)}
	b.mu.Lock()
	b.pending = append(b.pending, c)
	lead := !b.running
	b.running = true
	b.mu.Unlock()
	if lead {
		// The group's writes must not fail because the leader's caller left.
		b.lead(context.WithoutCancel(ctx))
	}
	select {
	case err := <-c.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *bitmap) lead(ctx context.Context) {
	for {
		b.mu.Lock()
		group := b.pending
		b.pending = nil
		if len(group) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		results, err := b.apply(ctx, group)
		for i, c := range group {
			if err != nil {
				c.done <- err
			} else {
				c.done <- results[i]
			}
		}
	}
}

// apply runs every change of a group against the current bitmap and stores
// the result with CAS, retrying on conflicts with other servers.
func (b *bitmap) apply(ctx context.Context, group []*change) ([]error, error) {
	kv, err := b.store.Get(ctx, b.key, 0)
	if errors.Is(err, storage.ErrNotFound) {
		kv = nil
	} else if err != nil {
		return nil, err
	}
	for attempt := 0; attempt < 100; attempt++ {
		used := new(big.Int)
		if kv != nil {
			var rec record
			if err := json.Unmarshal(kv.Value, &rec); err != nil {
				return nil, fmt.Errorf("allocator %s: corrupt record: %w", b.key, err)
			}
			if rec.Range != b.rng {
				return nil, fmt.Errorf("allocator %s: the stored range is %s but this server is configured with %s; all servers must use the same range", b.key, rec.Range, b.rng)
			}
			used.SetBytes(rec.Data)
		}
		results := make([]error, len(group))
		changed := false
		for i, c := range group {
			results[i] = c.f(used)
			changed = changed || results[i] == nil
		}
		if !changed {
			return results, nil
		}
		value, err := json.Marshal(record{Range: b.rng, Data: used.Bytes()})
		if err != nil {
			return nil, err
		}
		var next *storage.KeyValue
		if kv == nil {
			_, err = b.store.Create(ctx, b.key, value, 0)
			if errors.Is(err, storage.ErrKeyExists) {
				if kv, err = b.store.Get(ctx, b.key, 0); err != nil {
					return nil, err
				}
				continue
			}
		} else {
			next, err = b.store.Update(ctx, b.key, value, kv.ModRevision, 0)
			if errors.Is(err, storage.ErrConflict) {
				kv = next // the conflict carries the current state
				continue
			}
		}
		if err != nil {
			return nil, err
		}
		return results, nil
	}
	return nil, fmt.Errorf("allocator %s: too many concurrent changes, try again", b.key)
}

// allocateAny takes a free offset, scanning from a random start so that
// servers racing for items rarely pick the same one.
func (b *bitmap) allocateAny(ctx context.Context) (int, error) {
	var got int
	err := b.update(ctx, func(used *big.Int) error {
		start := rand.IntN(b.size)
		for i := 0; i < b.size; i++ {
			o := (start + i) % b.size
			if used.Bit(o) == 0 {
				used.SetBit(used, o, 1)
				got = o
				return nil
			}
		}
		return ErrFull
	})
	return got, err
}

func (b *bitmap) allocate(ctx context.Context, offset int) error {
	if offset < 0 || offset >= b.size {
		return ErrNotInRange
	}
	return b.update(ctx, func(used *big.Int) error {
		if used.Bit(offset) == 1 {
			return ErrAllocated
		}
		used.SetBit(used, offset, 1)
		return nil
	})
}

func (b *bitmap) release(ctx context.Context, offset int) error {
	if offset < 0 || offset >= b.size {
		return nil // nothing of ours
	}
	return b.update(ctx, func(used *big.Int) error {
		used.SetBit(used, offset, 0)
		return nil
	})
}

func (b *bitmap) isAllocated(ctx context.Context, offset int) (bool, error) {
	kv, err := b.store.Get(ctx, b.key, 0)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var rec record
	if err := json.Unmarshal(kv.Value, &rec); err != nil {
		return false, err
	}
	return new(big.Int).SetBytes(rec.Data).Bit(offset) == 1, nil
}
