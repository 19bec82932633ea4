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
// PreFilter writes it; Filter runs on many nodes at once and only reads, so
// reads must not take a lock that every filtering goroutine would fight over.
type CycleState struct {
	storage sync.Map // StateKey → StateData
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
	c.storage.Store(key, data)
}

// Read returns the data under key or an error naming it.
func (c *CycleState) Read(key StateKey) (StateData, error) {
	if d, ok := c.storage.Load(key); ok {
		return d.(StateData), nil
	}
	return nil, fmt.Errorf("cycle state has no %q", key)
}

// Clone deep-copies each entry through its Clone method.
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	out := NewCycleState()
	c.storage.Range(func(k, v any) bool {
		out.storage.Store(k, v.(StateData).Clone())
		return true
	})
	out.SkipFilterPlugins = c.SkipFilterPlugins
	out.SkipScorePlugins = c.SkipScorePlugins
	return out
}
