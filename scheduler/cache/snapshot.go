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
	withAff     []*framework.NodeInfo
	withAnti    []*framework.NodeInfo
	generation  int64
	removedSeen int64
}

var _ framework.NodeInfoLister = (*Snapshot)(nil)

// NewEmptySnapshot returns a snapshot to pass to UpdateSnapshot.
func NewEmptySnapshot() *Snapshot {
	return &Snapshot{byName: map[string]*framework.NodeInfo{}}
}

// NewSnapshot builds a snapshot straight from node infos (tests, preemption simulations).
func NewSnapshot(infos ...*framework.NodeInfo) *Snapshot {
	s := NewEmptySnapshot()
	for _, ni := range infos {
		if ni.Node() != nil {
			s.byName[ni.Node().Name] = ni
		}
	}
	s.rebuildLists(true)
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

func (s *Snapshot) rebuildLists(order bool) {
	if order {
		s.list = s.list[:0]
		names := make([]string, 0, len(s.byName))
		for n := range s.byName {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			s.list = append(s.list, s.byName[n])
		}
	} else {
		for i, ni := range s.list {
			s.list[i] = s.byName[ni.Node().Name]
		}
	}
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

// UpdateSnapshot brings s up to date, copying only nodes whose generation
// moved since s was last updated.
func (c *Cache) UpdateSnapshot(s *Snapshot) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if s.generation == c.generation && s.removedSeen == c.removedNodes {
		return
	}
	reorder := s.removedSeen != c.removedNodes
	for name, ni := range c.nodes {
		if ni.Generation <= s.generation {
			continue
		}
		if ni.Node() == nil {
			if _, ok := s.byName[name]; ok {
				delete(s.byName, name)
				reorder = true
			}
			continue
		}
		clone := ni.Clone()
		clone.ImageStates = c.imageSummariesLocked(ni)
		if _, ok := s.byName[name]; !ok {
			reorder = true
		}
		s.byName[name] = clone
	}
	if reorder {
		// A node left (possibly with no cache entry any more): drop anything stale.
		for name := range s.byName {
			if ni, ok := c.nodes[name]; !ok || ni.Node() == nil {
				delete(s.byName, name)
			}
		}
	}
	s.rebuildLists(reorder)
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
