package expectations

import (
	"testing"
	"time"
)

func TestStore(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	tests := []struct {
		name string
		do   func(s *Store)
		want bool
	}{
		{"an unknown controller is satisfied", func(s *Store) {}, true},
		{"pending creations are not satisfied", func(s *Store) { s.ExpectCreations("ns/a", 2) }, false},
		{"creations observed one by one become satisfied", func(s *Store) {
			s.ExpectCreations("ns/a", 2)
			s.CreationObserved("ns/a")
			s.CreationObserved("ns/a")
		}, true},
		{"observing more creations than expected stays satisfied", func(s *Store) {
			s.ExpectCreations("ns/a", 1)
			s.CreationObserved("ns/a")
			s.CreationObserved("ns/a")
		}, true},
		{"a pending deletion is not satisfied", func(s *Store) { s.ExpectDeletions("ns/a", []string{"ns/p1", "ns/p2"}) }, false},
		{"the same deletion observed twice counts once", func(s *Store) {
			s.ExpectDeletions("ns/a", []string{"ns/p1", "ns/p2"})
			s.DeletionObserved("ns/a", "ns/p1")
			s.DeletionObserved("ns/a", "ns/p1")
		}, false},
		{"all deletions observed is satisfied", func(s *Store) {
			s.ExpectDeletions("ns/a", []string{"ns/p1", "ns/p2"})
			s.DeletionObserved("ns/a", "ns/p2")
			s.DeletionObserved("ns/a", "ns/p1")
		}, true},
		{"expectations expire after the TTL", func(s *Store) {
			s.ExpectCreations("ns/a", 3)
			now = now.Add(2 * time.Minute)
		}, true},
		{"an expired deletion never observed does not hold back later creations", func(s *Store) {
			s.ExpectDeletions("ns/a", []string{"ns/ghost"})
			now = now.Add(2 * time.Minute)
			s.ExpectCreations("ns/a", 1)
			s.CreationObserved("ns/a")
		}, true},
		{"expired creations are replaced by later deletions, not kept", func(s *Store) {
			s.ExpectCreations("ns/a", 2)
			now = now.Add(2 * time.Minute)
			s.ExpectDeletions("ns/a", []string{"ns/p1"})
			s.DeletionObserved("ns/a", "ns/p1")
		}, true},
		{"a met record is replaced", func(s *Store) {
			s.ExpectDeletions("ns/a", []string{"ns/p1"})
			s.DeletionObserved("ns/a", "ns/p1")
			s.ExpectCreations("ns/a", 1)
		}, false},
		{"creations expected twice while pending add up", func(s *Store) {
			s.ExpectCreations("ns/a", 1)
			s.ExpectCreations("ns/a", 1)
			s.CreationObserved("ns/a")
		}, false},
		{"creations and deletions of one sync are both pending", func(s *Store) {
			s.ExpectCreations("ns/a", 1)
			s.ExpectDeletions("ns/a", []string{"ns/p1"})
			s.CreationObserved("ns/a")
		}, false},
		{"forget clears everything", func(s *Store) {
			s.ExpectCreations("ns/a", 3)
			s.Forget("ns/a")
		}, true},
		{"other controllers do not interfere", func(s *Store) {
			s.ExpectCreations("ns/a", 1)
			s.CreationObserved("ns/b")
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			s := New(time.Minute, clock)
			tc.do(s)
			if got := s.Satisfied("ns/a"); got != tc.want {
				adds, dels := s.Pending("ns/a")
				t.Fatalf("Satisfied = %v, want %v (pending adds %d deletions %d)", got, tc.want, adds, dels)
			}
		})
	}
}
