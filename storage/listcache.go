package storage

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/google/btree"
)

// listCache mirrors the current state (kv with its values) in memory so that
// a list at the newest revision reads memory instead of the database. The hub
// keeps it, applying the same ordered, gap-free event stream the watchers
// get, so the cache is always the exact state at its revision.
//
// Lists stay linearizable, with several servers on one database too: a list
// first reads the database's newest revision R (one small query), waits until
// the cache has applied R, and then serves the cache's state at its own
// revision, which is R or newer. So it never misses a write that was
// acknowledged, by any server, before the list began. (This is the
// "consistent read from cache" of the Kubernetes apiserver, one level down.)
//
// The cache holds values decrypted, like the watch ring, and shares the
// *KeyValue of each event with it. If the state outgrows Config.ListCacheBytes
// the cache is dropped for good (lists read the database, as without it).
// Keys under Config.ListCacheSkip are not mirrored: lists and reads that
// reach them read the database.
type listCache struct {
	limit int
	skip  []string // key prefixes not mirrored
	log   func(msg string, args ...any)

	mu       sync.RWMutex
	tree     *btree.BTreeG[*KeyValue]
	loaded   bool // tree mirrors the state as of rev
	rev      int64
	bytes    int           // the approximate memory held by tree
	disabled bool          // outgrew limit; never loaded again
	advanced chan struct{} // closed (and replaced) when rev moves on
}

// cacheEntryOverhead approximates a cached key's memory beyond its key and
// value bytes: the KeyValue struct, the string header and the tree's slot.
const cacheEntryOverhead = 112

func newListCache(limit int, skip []string, log func(string, ...any)) *listCache {
	return &listCache{limit: limit, skip: skip, log: log, disabled: limit < 0, advanced: make(chan struct{})}
}

// skipped tells whether key is under a prefix the cache does not mirror.
func (c *listCache) skipped(key string) bool {
	for _, p := range c.skip {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// reachesSkipped tells whether the key range [lo, hi) holds keys of a
// prefix the cache does not mirror.
func (c *listCache) reachesSkipped(lo, hi string) bool {
	for _, p := range c.skip {
		plo, phi := prefixRange(p)
		if lo < phi && plo < hi {
			return true
		}
	}
	return false
}

func kvLess(a, b *KeyValue) bool { return a.Key < b.Key }

func entryBytes(kv *KeyValue) int { return cacheEntryOverhead + len(kv.Key) + len(kv.Value) }

// fill builds the cache from a snapshot of every current key at revision at,
// then (under the hub's lock, so that no dispatch interleaves) applies the
// events the hub dispatched after at. It returns false when the hub has moved
// on further than its ring reaches back; the caller takes a new snapshot.
func (c *listCache) fill(h *hub, kvs []*KeyValue, at int64) bool {
	tree := btree.NewG(32, kvLess)
	size := 0
	for _, kv := range kvs {
		if c.skipped(kv.Key) {
			continue
		}
		tree.ReplaceOrInsert(kv)
		size += entryBytes(kv)
	}
	if c.limit > 0 && size > c.limit {
		c.mu.Lock()
		c.disableLocked(size)
		c.mu.Unlock()
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	rev := at
	if h.rev > at {
		if len(h.ring) == 0 || h.ring[0].Revision > at+1 {
			return false
		}
		for _, ev := range h.ring {
			if ev.Revision > at && !c.skipped(ev.KV.Key) {
				size += applyTo(tree, ev)
			}
		}
		rev = h.rev
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.disabled {
		return true
	}
	c.tree, c.rev, c.bytes, c.loaded = tree, rev, size, true
	c.advanceLocked()
	return true
}

// applyTo applies one event to tree and returns the change in bytes.
func applyTo(tree *btree.BTreeG[*KeyValue], ev Event) int {
	delta := 0
	if ev.Type == Deleted {
		if old, ok := tree.Delete(ev.KV); ok {
			delta -= entryBytes(old)
		}
		return delta
	}
	if old, ok := tree.ReplaceOrInsert(ev.KV); ok {
		delta -= entryBytes(old)
	}
	return delta + entryBytes(ev.KV)
}

// apply records events the hub dispatches, in revision order; the hub calls
// it under its lock. Events the cache already holds are skipped.
func (c *listCache) apply(evs []Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.loaded {
		return
	}
	moved := false
	for _, ev := range evs {
		if ev.Revision <= c.rev {
			continue
		}
		if !c.skipped(ev.KV.Key) {
			c.bytes += applyTo(c.tree, ev)
		}
		c.rev, moved = ev.Revision, true
	}
	if c.limit > 0 && c.bytes > c.limit {
		c.disableLocked(c.bytes)
	}
	if moved {
		c.advanceLocked()
	}
}

// invalidate forgets the state (the hub skipped compacted revisions, so the
// cache can no longer follow); lists read the database until a refill.
func (c *listCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tree, c.rev, c.bytes, c.loaded = nil, 0, 0, false
	c.advanceLocked()
}

func (c *listCache) disableLocked(size int) {
	c.log("list cache disabled: the current state outgrew it; lists read the database from now on",
		"bytes", size, "limit", c.limit, "setting", "ListCacheBytes")
	c.tree, c.rev, c.bytes, c.loaded, c.disabled = nil, 0, 0, false, true
	c.advanceLocked()
}

func (c *listCache) advanceLocked() {
	close(c.advanced)
	c.advanced = make(chan struct{})
}

// usable tells whether the cache currently mirrors the state.
func (c *listCache) usable() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.loaded
}

// waitFor waits until the cache has applied revision rev, calling wake (the
// hub's poller) while it lags. It gives up (false) when the cache is not
// usable, after maxWait, or when ctx ends; the caller then reads the database.
func (c *listCache) waitFor(ctx context.Context, rev int64, wake func(), maxWait time.Duration) bool {
	var timer *time.Timer
	for {
		c.mu.RLock()
		loaded, cur, advanced := c.loaded, c.rev, c.advanced
		c.mu.RUnlock()
		switch {
		case !loaded:
			return false
		case cur >= rev:
			return true
		}
		wake()
		if timer == nil {
			timer = time.NewTimer(maxWait)
			defer timer.Stop()
		}
		select {
		case <-advanced:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// list returns one page of keys in [lo, hi) after startAfter as of the
// cache's revision. exactly, when not 0, requires that revision (a later page
// of a paginated list). ok is false when the cache cannot answer.
func (c *listCache) list(lo, hi, startAfter string, limit int, exactly int64) (kvs []*KeyValue, rev int64, more, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.loaded || (exactly != 0 && c.rev != exactly) || c.reachesSkipped(lo, hi) {
		return nil, 0, false, false
	}
	from := lo
	if startAfter > lo {
		from = startAfter
	}
	c.tree.AscendRange(&KeyValue{Key: from}, &KeyValue{Key: hi}, func(kv *KeyValue) bool {
		if kv.Key == startAfter {
			return true
		}
		if limit > 0 && len(kvs) == limit {
			more = true
			return false
		}
		kvs = append(kvs, kv)
		return true
	})
	return kvs, c.rev, more, true
}

// get returns key's cached state; ok is false when the cache cannot answer.
func (c *listCache) get(key string) (kv *KeyValue, found, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.loaded || c.skipped(key) {
		return nil, false, false
	}
	kv, found = c.tree.Get(&KeyValue{Key: key})
	return kv, found, true
}
