package endpointslicemirroring

import (
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// deletionExpected marks a slice this controller deleted and has not yet seen go.
const deletionExpected int64 = -1

// staleLimit bounds how long a write this controller has not seen in its cache holds the Service
// back. A slice created and deleted again while the informer was relisting is never seen at all;
// without a limit its record would stop the Service's mirroring until a restart.
const staleLimit = time.Minute

// tracker remembers, per Service key, the generation of each slice this controller last wrote
// (or that it deleted it), so that a sync against a cache that has not caught up with those writes
// waits instead of creating or deleting twice, and so that the informer events of its own writes
// do not wake it again.
type tracker struct {
	mu    sync.Mutex
	now   func() time.Time
	bySvc map[string]map[types.UID]written
}

// written is a slice generation this controller wrote (or deletionExpected) and when.
type written struct {
	gen int64
	at  time.Time
}

func newTracker(now func() time.Time) *tracker {
	return &tracker{now: now, bySvc: map[string]map[types.UID]written{}}
}

func sliceKey(s *discoveryv1.EndpointSlice) string {
	return s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName]
}

func (t *tracker) set(s *discoveryv1.EndpointSlice, g int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := sliceKey(s)
	if t.bySvc[k] == nil {
		t.bySvc[k] = map[types.UID]written{}
	}
	t.bySvc[k][s.UID] = written{gen: g, at: t.now()}
}

// wrote records a slice as the API server returned it from a create or update.
func (t *tracker) wrote(s *discoveryv1.EndpointSlice) { t.set(s, s.Generation) }

// expectDeletion records a slice this controller deleted.
func (t *tracker) expectDeletion(s *discoveryv1.EndpointSlice) { t.set(s, deletionExpected) }

// shouldSync is true for a slice version this controller did not write itself.
func (t *tracker) shouldSync(s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.bySvc[sliceKey(s)][s.UID]
	return !ok || (w.gen != deletionExpected && s.Generation > w.gen)
}

// deleted forgets a slice that is gone and reports whether this controller deleted it.
func (t *tracker) deleted(s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	gs := t.bySvc[sliceKey(s)]
	w, ok := gs[s.UID]
	delete(gs, s.UID)
	return ok && w.gen == deletionExpected
}

// stale is true when the cached slices of a Service lag what this controller wrote: a slice in an
// older generation, one it deleted still there, or one it created not there yet. A write older than
// staleLimit no longer counts (its record is dropped): the cache is taken as it is.
func (t *tracker) stale(key string, cached []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	gs := t.bySvc[key]
	if len(gs) == 0 {
		return false
	}
	now := t.now()
	for uid, w := range gs {
		if now.Sub(w.at) > staleLimit {
			delete(gs, uid)
		}
	}
	seen := make(map[types.UID]bool, len(cached))
	for _, s := range cached {
		seen[s.UID] = true
		if w, ok := gs[s.UID]; ok && (w.gen == deletionExpected || s.Generation < w.gen) {
			return true
		}
	}
	for uid, w := range gs {
		if w.gen != deletionExpected && !seen[uid] {
			return true
		}
	}
	return false
}

// forget drops what is known of a Service's slices (they are being deleted wholesale).
func (t *tracker) forget(key string) {
	t.mu.Lock()
	delete(t.bySvc, key)
	t.mu.Unlock()
}
