package expectations

import (
	"sync"
	"time"
)

// DefaultTTL is how long unobserved expectations are trusted before the controller acts anyway.
// Kubernetes uses five minutes; a watch that lost an event is relisted long before that.
const DefaultTTL = 5 * time.Minute

// Store tracks expectations per controller key ("namespace/name"). The zero value is not usable; call New.
type Store struct {
	mu    sync.Mutex
	ttl   time.Duration
	now   func() time.Time
	items map[string]*record
}

type record struct {
	adds      int
	deletions map[string]struct{}
	setAt     time.Time
}

// New returns an empty Store. ttl <= 0 means DefaultTTL; now == nil means time.Now.
func New(ttl time.Duration, now func() time.Time) *Store {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if now == nil {
		now = time.Now
	}
	return &Store{ttl: ttl, now: now, items: map[string]*record{}}
}

// ExpectCreations records that n creations were issued for controllerKey. A record that was met or
// has expired is replaced, as Kubernetes' SetExpectations does, so a deletion that was never observed
// (or a creation count that never came down) cannot hold back this and every later action. While the
// record is still pending and unexpired, as between the calls one sync makes, the counts add up.
func (s *Store) ExpectCreations(controllerKey string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.fresh(controllerKey)
	r.adds += n
	r.setAt = s.now()
}

// ExpectDeletions records the keys ("namespace/name") of objects whose deletion was issued. Like
// ExpectCreations it replaces a met or expired record and adds to a pending one.
func (s *Store) ExpectDeletions(controllerKey string, objectKeys []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.fresh(controllerKey)
	for _, k := range objectKeys {
		r.deletions[k] = struct{}{}
	}
	r.setAt = s.now()
}

// CreationObserved lowers the pending creation count by one (never below zero). Controllers also call it
// when a create call failed, since that object will never be observed.
func (s *Store) CreationObserved(controllerKey string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.items[controllerKey]; ok && r.adds > 0 {
		r.adds--
	}
}

// DeletionObserved forgets one pending deletion. Observing the same object twice (first its deletion
// timestamp, then its removal) is harmless because deletions are tracked by object key, not by count.
func (s *Store) DeletionObserved(controllerKey, objectKey string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.items[controllerKey]; ok {
		delete(r.deletions, objectKey)
	}
}

// Satisfied reports whether the controller may act: nothing is pending, nothing was ever recorded, or
// the record is older than the TTL.
func (s *Store) Satisfied(controllerKey string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.items[controllerKey]
	return !ok || s.metOrExpired(r)
}

func (s *Store) metOrExpired(r *record) bool {
	return (r.adds <= 0 && len(r.deletions) == 0) || s.now().Sub(r.setAt) > s.ttl
}

// Pending returns the outstanding creation count and deletion count, for logs and tests.
func (s *Store) Pending(controllerKey string) (adds, deletions int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.items[controllerKey]; ok {
		return r.adds, len(r.deletions)
	}
	return 0, 0
}

// Forget drops everything recorded for controllerKey (the controller object is gone).
func (s *Store) Forget(controllerKey string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.items, controllerKey)
}

// fresh returns the record new expectations go into: the pending one, or a new empty one in place of
// a record that was met or has expired.
func (s *Store) fresh(controllerKey string) *record {
	r, ok := s.items[controllerKey]
	if !ok || s.metOrExpired(r) {
		r = &record{deletions: map[string]struct{}{}}
		s.items[controllerKey] = r
	}
	return r
}
