package framework

import (
	"fmt"
	"sync"
)

// StateKey names one plugin's data in a CycleState.
type StateKey string

// StateData is what a plugin keeps between the phases of one attempt. Clone
// must copy whatever preemption may change (it simulates removing pods on a
// copy of the state).
type StateData interface {
	Clone() StateData
}

// CycleState carries plugin data through one scheduling attempt of one pod.
// PreFilter writes it; Filter runs on many nodes at once and only reads.
type CycleState struct {
	mu      sync.RWMutex
	storage map[StateKey]StateData
	// SkipFilterPlugins and SkipScorePlugins name plugins whose PreFilter or
	// PreScore returned Skip.
	SkipFilterPlugins map[string]bool
	SkipScorePlugins  map[string]bool
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{storage: map[StateKey]StateData{}}
}

// Write stores data under key.
func (c *CycleState) Write(key StateKey, data StateData) {
	c.mu.Lock()
	c.storage[key] = data
	c.mu.Unlock()
}

// Read returns the data under key or an error naming it.
func (c *CycleState) Read(key StateKey) (StateData, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if d, ok := c.storage[key]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("cycle state has no %q", key)
}

// Clone deep-copies each entry through its Clone method.
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	out := NewCycleState()
	c.mu.RLock()
	defer c.mu.RUnlock()
	for k, v := range c.storage {
		out.storage[k] = v.Clone()
	}
	out.SkipFilterPlugins = c.SkipFilterPlugins
	out.SkipScorePlugins = c.SkipScorePlugins
	return out
}
