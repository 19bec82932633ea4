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

// ExpectCreations records that n creations were issued for controllerKey. It replaces any earlier
// creation count, because a controller only issues new creations once the earlier ones were observed.
func (s *Store) ExpectCreations(controllerKey string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.get(controllerKey)
	r.adds = n
	r.setAt = s.now()
}

// ExpectDeletions records the keys ("namespace/name") of objects whose deletion was issued.
func (s *Store) ExpectDeletions(controllerKey string, objectKeys []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.get(controllerKey)
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
	if !ok {
		return true
	}
	if r.adds <= 0 && len(r.deletions) == 0 {
		return true
	}
	return s.now().Sub(r.setAt) > s.ttl
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

func (s *Store) get(controllerKey string) *record {
	r, ok := s.items[controllerKey]
	if !ok {
		r = &record{deletions: map[string]struct{}{}}
		s.items[controllerKey] = r
	}
	return r
}
