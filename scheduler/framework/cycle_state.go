package framework

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// StateKey names one plugin's data in a CycleState.
type StateKey string

// StateData is what a plugin keeps between the phases of one attempt. Clone
// must copy whatever preemption may change (it simulates removing pods on a
// copy of the state).
type StateData interface {
	Clone() StateData
}

type stateEntry struct {
	key  StateKey
	data StateData
}

// CycleState carries plugin data through one scheduling attempt of one pod.
// PreFilter writes it; Filter and Score run on many nodes at once and only
// read, once per node and plugin, so reads take no lock and hash nothing: the
// entries (a handful, one per plugin phase) are an immutable slice searched
// linearly, and Write publishes a new copy.
type CycleState struct {
	mu      sync.Mutex // serializes writers
	entries atomic.Pointer[[]stateEntry]
	// SkipFilterPlugins and SkipScorePlugins name plugins whose PreFilter or
	// PreScore returned Skip.
	SkipFilterPlugins map[string]bool
	SkipScorePlugins  map[string]bool
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{}
}

// Write stores data under key.
func (c *CycleState) Write(key StateKey, data StateData) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var old []stateEntry
	if p := c.entries.Load(); p != nil {
		old = *p
	}
	next := make([]stateEntry, len(old), len(old)+1)
	copy(next, old)
	for i := range next {
		if next[i].key == key {
			next[i].data = data
			c.entries.Store(&next)
			return
		}
	}
	next = append(next, stateEntry{key, data})
	c.entries.Store(&next)
}

// Read returns the data under key or an error naming it.
func (c *CycleState) Read(key StateKey) (StateData, error) {
	if p := c.entries.Load(); p != nil {
		for _, e := range *p {
			if e.key == key {
				return e.data, nil
			}
		}
	}
	return nil, fmt.Errorf("cycle state has no %q", key)
}

// Clone deep-copies each entry through its Clone method.
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	out := NewCycleState()
	if p := c.entries.Load(); p != nil {
		entries := make([]stateEntry, len(*p))
		for i, e := range *p {
			entries[i] = stateEntry{e.key, e.data.Clone()}
		}
		out.entries.Store(&entries)
	}
	out.SkipFilterPlugins = c.SkipFilterPlugins
	out.SkipScorePlugins = c.SkipScorePlugins
	return out
}
