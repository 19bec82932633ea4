package storage

import "context"

// ListFromDatabase lists without the list cache, for tests that compare the
// two.
func (s *Store) ListFromDatabase(ctx context.Context, opts ListOptions) (*ListResult, error) {
	return s.listDB(ctx, opts)
}

// ListCacheUsable tells whether lists are being served from the cache.
func (s *Store) ListCacheUsable() bool { return s.cache.usable() }

// LiveWatchers counts the watchers on the hub's live stream.
func (s *Store) LiveWatchers() int {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	n := 0
	s.hub.eachLocked(func(*watcher) { n++ })
	return n
}

// WatchReleasedItsContext reports whether a store watch no longer has its
// context.AfterFunc registered: stopping it again reports it gone.
func WatchReleasedItsContext(w Watch) bool {
	stop := w.(*watcher).afterCtx.Load()
	return stop != nil && !(*stop)()
}

// RebindDollar is rebindDollar, for tests writing raw SQL for PostgreSQL.
var RebindDollar = rebindDollar
