package cache

import (
	"fmt"
	"sort"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// Snapshot is a consistent copy of the cache for one scheduling attempt. It
// is owned by the scheduling loop: only UpdateSnapshot writes it, between attempts.
type Snapshot struct {
	byName      map[string]*framework.NodeInfo
	list        []*framework.NodeInfo
	index       map[string]int // node name → position in list
	withAff     []*framework.NodeInfo
	withAnti    []*framework.NodeInfo
	generation  int64
	removedSeen int64
}

var _ framework.NodeInfoLister = (*Snapshot)(nil)

// NewEmptySnapshot returns a snapshot to pass to UpdateSnapshot.
func NewEmptySnapshot() *Snapshot {
	return &Snapshot{byName: map[string]*framework.NodeInfo{}, index: map[string]int{}}
}

// NewSnapshot builds a snapshot straight from node infos (tests, preemption simulations).
func NewSnapshot(infos ...*framework.NodeInfo) *Snapshot {
	s := NewEmptySnapshot()
	for _, ni := range infos {
		if ni.Node() != nil {
			s.byName[ni.Node().Name] = ni
		}
	}
	s.rebuildLists()
	return s
}

// List implements framework.NodeInfoLister.
func (s *Snapshot) List() []*framework.NodeInfo { return s.list }

// HavePodsWithAffinityList implements framework.NodeInfoLister.
func (s *Snapshot) HavePodsWithAffinityList() []*framework.NodeInfo { return s.withAff }

// HavePodsWithRequiredAntiAffinityList implements framework.NodeInfoLister.
func (s *Snapshot) HavePodsWithRequiredAntiAffinityList() []*framework.NodeInfo { return s.withAnti }

// Get implements framework.NodeInfoLister.
func (s *Snapshot) Get(name string) (*framework.NodeInfo, error) {
	ni, ok := s.byName[name]
	if !ok {
		return nil, fmt.Errorf("node %q not found in the scheduling snapshot", name)
	}
	return ni, nil
}

// rebuildLists orders list by node name and rebuilds the affinity lists.
func (s *Snapshot) rebuildLists() {
	s.list = s.list[:0]
	names := make([]string, 0, len(s.byName))
	for n := range s.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	clear(s.index)
	for i, n := range names {
		s.list = append(s.list, s.byName[n])
		s.index[n] = i
	}
	s.rebuildAffinityLists()
}

func (s *Snapshot) rebuildAffinityLists() {
	s.withAff = s.withAff[:0]
	s.withAnti = s.withAnti[:0]
	for _, ni := range s.list {
		if len(ni.PodsWithAffinity) > 0 {
			s.withAff = append(s.withAff, ni)
		}
		if len(ni.PodsWithRequiredAntiAffinity) > 0 {
			s.withAnti = append(s.withAnti, ni)
		}
	}
}

// hasAffinityPods reports whether ni belongs on an affinity list.
func hasAffinityPods(ni *framework.NodeInfo) bool {
	return len(ni.PodsWithAffinity) > 0 || len(ni.PodsWithRequiredAntiAffinity) > 0
}

// UpdateSnapshot brings s up to date, copying only nodes whose generation
// moved since s was last updated.
func (c *Cache) UpdateSnapshot(s *Snapshot) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if s.generation == c.generation && s.removedSeen == c.removedNodes {
		return
	}
	reorder := s.removedSeen != c.removedNodes
	affinity := false // an affinity list holds, or must hold, a changed node
	first := sort.Search(len(c.changes), func(i int) bool { return c.changes[i].generation > s.generation })
	for _, ch := range c.changes[first:] {
		ni, ok := c.nodes[ch.name]
		if !ok || ni.Generation <= s.generation {
			continue // removed (see reorder below), or not changed since s
		}
		old, had := s.byName[ch.name]
		if had && old.Generation == ni.Generation {
			continue // a later change of a node already copied
		}
		if had && hasAffinityPods(old) {
			affinity = true
		}
		if ni.Node() == nil {
			if had {
				delete(s.byName, ch.name)
				reorder = true
			}
			continue
		}
		clone := ni.Clone()
		clone.ImageStates = c.imageSummariesLocked(ni)
		if hasAffinityPods(clone) {
			affinity = true
		}
		s.byName[ch.name] = clone
		if i, ok := s.index[ch.name]; ok && had && !reorder {
			s.list[i] = clone
		} else {
			reorder = true
		}
	}
	if reorder {
		// A node left (possibly with no cache entry any more): drop anything stale.
		for name := range s.byName {
			if ni, ok := c.nodes[name]; !ok || ni.Node() == nil {
				delete(s.byName, name)
			}
		}
		s.rebuildLists()
	} else if affinity {
		s.rebuildAffinityLists()
	}
	s.generation = c.generation
	s.removedSeen = c.removedNodes
}

func (c *Cache) imageSummariesLocked(ni *framework.NodeInfo) map[string]*framework.ImageStateSummary {
	out := map[string]*framework.ImageStateSummary{}
	for _, img := range ni.Node().Status.Images {
		for _, name := range img.Names {
			if st, ok := c.images[name]; ok {
				out[name] = &framework.ImageStateSummary{Size: st.size, NumNodes: st.nodes.Len()}
			}
		}
	}
	return out
}
