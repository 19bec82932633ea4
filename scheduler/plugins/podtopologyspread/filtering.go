package podtopologyspread

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// PodTopologySpread implements PreFilter (with extensions), Filter, PreScore and Score.
type PodTopologySpread struct {
	h framework.Handle
	// defaults apply to pods without constraints of their own.
	defaults []v1.TopologySpreadConstraint
	// systemDefaulted: defaults are kube-scheduler's built-in ones.
	systemDefaulted bool
	// owners backs the default constraints; nil without an informer factory.
	owners *ownerListers
}

// New builds the plugin from Args (nil for kube-scheduler's defaults).
func New(args any, h framework.Handle) (framework.Plugin, error) {
	a, _, err := framework.PluginArgs[Args](Name, args)
	if err != nil {
		return nil, err
	}
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	pl := &PodTopologySpread{h: h, defaults: a.DefaultConstraints}
	if a.DefaultingType != ListDefaulting {
		pl.defaults, pl.systemDefaulted = systemDefaults, true
	}
	if len(pl.defaults) > 0 && h != nil && h.SharedInformerFactory() != nil {
		f := h.SharedInformerFactory()
		pl.owners = &ownerListers{
			services:               f.Core().V1().Services().Lister(),
			replicationControllers: f.Core().V1().ReplicationControllers().Lister(),
			replicaSets:            f.Apps().V1().ReplicaSets().Lister(),
			statefulSets:           f.Apps().V1().StatefulSets().Lister(),
		}
	}
	return pl, nil
}

// Name implements framework.Plugin.
func (*PodTopologySpread) Name() string { return Name }

type preFilterState struct {
	constraints []constraint
	// counts[i] maps constraint i's domain values to matching pod counts.
	counts []map[string]int64
	// byCount[i] is how many of constraint i's domains hold each count and
	// mins[i] the least count: Filter reads the global minimum in O(1), not
	// over every domain of every node it checks, and AddPod/RemovePod keep
	// both up to date as cheaply (as kube-scheduler's critical paths).
	byCount []map[int64]int
	mins    []int64
	aff     nodeaffinity.RequiredNodeAffinity
}

func (s *preFilterState) Clone() framework.StateData {
	c := &preFilterState{constraints: s.constraints, aff: s.aff, mins: slices.Clone(s.mins),
		counts: make([]map[string]int64, len(s.counts)), byCount: make([]map[int64]int, len(s.byCount))}
	for i, m := range s.counts {
		c.counts[i] = maps.Clone(m)
	}
	for i, m := range s.byCount {
		c.byCount[i] = maps.Clone(m)
	}
	return c
}

// index builds byCount and mins from counts.
func (s *preFilterState) index() {
	s.byCount = make([]map[int64]int, len(s.counts))
	s.mins = make([]int64, len(s.counts))
	for i, m := range s.counts {
		s.byCount[i] = make(map[int64]int)
		s.mins[i] = math.MaxInt64
		for _, n := range m {
			s.byCount[i][n]++
			s.mins[i] = min(s.mins[i], n)
		}
	}
}

// add adds delta matching pods to domain of constraint i.
func (s *preFilterState) add(i int, domain string, delta int64) {
	old, existed := s.counts[i][domain]
	n := old + delta
	s.counts[i][domain] = n
	by := s.byCount[i]
	if existed {
		if by[old]--; by[old] == 0 {
			delete(by, old)
		}
	}
	by[n]++
	switch {
	case len(s.counts[i]) == 1 || n < s.mins[i]:
		s.mins[i] = n
	case existed && old == s.mins[i] && by[old] == 0:
		// The last domain at the minimum moved up: the next count held.
		if delta == 1 {
			s.mins[i] = n
			return
		}
		s.mins[i] = math.MaxInt64
		for c := range by {
			s.mins[i] = min(s.mins[i], c)
		}
	}
}

// minMatch is the global minimum for constraint i; fewer domains than
// minDomains make it zero, so pods keep spreading into new domains.
func (s *preFilterState) minMatch(i int) int64 {
	if n := int64(len(s.counts[i])); n == 0 || n < s.constraints[i].minDomains {
		return 0
	}
	return s.mins[i]
}

// PreFilter counts matching pods per domain for the hard constraints: the
// pod's own, or the default ones when it has none.
func (pl *PodTopologySpread) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	cs, err := pl.podConstraints(pod, v1.DoNotSchedule)
	if err != nil {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
	}
	if len(cs) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	s := &preFilterState{constraints: cs, counts: make([]map[string]int64, len(cs)), aff: nodeaffinity.GetRequiredNodeAffinity(pod)}
	for i := range s.counts {
		s.counts[i] = map[string]int64{}
	}
	for _, ni := range pl.h.SnapshotLister().List() {
		node := ni.Node()
		if !hasAllKeys(node, cs) {
			continue
		}
		for i := range cs {
			if c := &cs[i]; c.includes(node, pod, s.aff) {
				s.counts[i][node.Labels[c.key]] += countMatching(ni, pod.Namespace, c.selector)
			}
		}
	}
	s.index()
	state.Write(preFilterKey, s)
	return nil, nil
}

func readPreFilter(state *framework.CycleState) (*preFilterState, error) {
	d, err := state.Read(preFilterKey)
	if err != nil {
		return nil, err
	}
	s, ok := d.(*preFilterState)
	if !ok {
		return nil, fmt.Errorf("%s: unexpected state %T", Name, d)
	}
	return s, nil
}

// AddPod implements framework.PreFilterExtensions.
func (pl *PodTopologySpread) AddPod(_ context.Context, state *framework.CycleState, pod *v1.Pod, add *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	return update(state, pod, add.Pod, ni, 1)
}

// RemovePod implements framework.PreFilterExtensions.
func (pl *PodTopologySpread) RemovePod(_ context.Context, state *framework.CycleState, pod *v1.Pod, rm *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	return update(state, pod, rm.Pod, ni, -1)
}

func update(state *framework.CycleState, pod, changed *v1.Pod, ni *framework.NodeInfo, delta int64) *framework.Status {
	s, err := readPreFilter(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	node := ni.Node()
	if !hasAllKeys(node, s.constraints) {
		return nil
	}
	for i := range s.constraints {
		if c := &s.constraints[i]; c.includes(node, pod, s.aff) && matches(changed, pod.Namespace, c.selector) {
			s.add(i, node.Labels[c.key], delta)
		}
	}
	return nil
}

// Filter rejects a node whose domain would be more than maxSkew above the minimum.
func (pl *PodTopologySpread) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	s, err := readPreFilter(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	node := ni.Node()
	for i, c := range s.constraints {
		v, ok := node.Labels[c.key]
		if !ok {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeLabelNotMatch)
		}
		var self int64
		if c.selector.Matches(labels.Set(pod.Labels)) {
			self = 1
		}
		if s.counts[i][v]+self-s.minMatch(i) > c.maxSkew {
			return framework.NewStatus(framework.Unschedulable, ErrReasonConstraintsNotMatch)
		}
	}
	return nil
}
