package interpodaffinity

import (
	"context"
	"errors"
	"fmt"
	"maps"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiffkube/skiff/scheduler/framework"
)

const (
	// Name is the plugin's registry name.
	Name = "InterPodAffinity"
	// ErrReasonExistingAntiAffinityRulesNotMatch: a placed pod's anti-affinity excludes the pod.
	ErrReasonExistingAntiAffinityRulesNotMatch = "node(s) didn't satisfy existing pods anti-affinity rules"
	// ErrReasonAffinityRulesNotMatch: the pod's required affinity is not met.
	ErrReasonAffinityRulesNotMatch = "node(s) didn't match pod affinity rules"
	// ErrReasonAntiAffinityRulesNotMatch: the pod's required anti-affinity is violated.
	ErrReasonAntiAffinityRulesNotMatch = "node(s) didn't match pod anti-affinity rules"

	preFilterKey framework.StateKey = "PreFilter" + Name
	preScoreKey  framework.StateKey = "PreScore" + Name
)

type topologyPair struct{ key, value string }

type topologyCounts map[topologyPair]int64

func (c topologyCounts) update(node *v1.Node, key string, delta int64) {
	if v, ok := node.Labels[key]; ok {
		p := topologyPair{key, v}
		c[p] += delta
		if c[p] == 0 {
			delete(c, p)
		}
	}
}

type preFilterState struct {
	pod *framework.PodInfo
	// existingAnti: domains where a placed pod's required anti-affinity selects the pod.
	existingAnti topologyCounts
	// affinity / anti: domains holding pods selected by the pod's required terms.
	affinity topologyCounts
	anti     topologyCounts
	nsLabels labels.Set
}

func (s *preFilterState) Clone() framework.StateData {
	c := *s
	c.existingAnti = maps.Clone(s.existingAnti)
	c.affinity = maps.Clone(s.affinity)
	c.anti = maps.Clone(s.anti)
	return &c
}

// InterPodAffinity implements PreFilter (with extensions), Filter, PreScore and Score.
type InterPodAffinity struct {
	h framework.Handle
	// hardWeight scores placed pods' required affinity terms selecting the pod.
	hardWeight int64
	// ignoreExistingPreferred skips scoring a pod without preferred terms.
	ignoreExistingPreferred bool
}

// Args configure the plugin, as kube-scheduler's InterPodAffinityArgs.
type Args struct {
	// HardPodAffinityWeight is what a placed pod's required affinity term
	// selecting the pod adds to its domain's score: 0 to 100, nil for
	// kube-scheduler's default, DefaultHardPodAffinityWeight.
	HardPodAffinityWeight *int32
	// IgnorePreferredTermsOfExistingPods leaves unscored a pod without
	// preferred terms of its own, whatever placed pods prefer.
	IgnorePreferredTermsOfExistingPods bool
}

// DefaultHardPodAffinityWeight is kube-scheduler's hardPodAffinityWeight.
const DefaultHardPodAffinityWeight = 1

// Validate checks a as kube-scheduler checks InterPodAffinityArgs.
func (a Args) Validate() error {
	if w := a.HardPodAffinityWeight; w != nil && (*w < 0 || *w > 100) {
		return field.Invalid(field.NewPath("hardPodAffinityWeight"), *w, "not in valid range [0, 100]")
	}
	return nil
}

// New builds the plugin from Args (nil for kube-scheduler's defaults).
func New(args any, h framework.Handle) (framework.Plugin, error) {
	if h == nil {
		return nil, errors.New("InterPodAffinity needs a framework handle")
	}
	a, _, err := framework.PluginArgs[Args](Name, args)
	if err != nil {
		return nil, err
	}
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	pl := &InterPodAffinity{h: h, hardWeight: DefaultHardPodAffinityWeight, ignoreExistingPreferred: a.IgnorePreferredTermsOfExistingPods}
	if a.HardPodAffinityWeight != nil {
		pl.hardWeight = int64(*a.HardPodAffinityWeight)
	}
	return pl, nil
}

// Name implements framework.Plugin.
func (*InterPodAffinity) Name() string { return Name }

func (pl *InterPodAffinity) nsLabels(ns string) labels.Set {
	if l := pl.h.Namespaces(); l != nil {
		return labels.Set(l.NamespaceLabels(ns))
	}
	return nil
}

// PreFilter counts, per topology domain, the placed pods relevant to the
// pod's required terms and the placed pods whose anti-affinity rejects it.
// As kube-scheduler's, it skips the plugin's Filter for a pod without
// required terms that no placed pod's anti-affinity selects.
func (pl *InterPodAffinity) PreFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	lister := pl.h.SnapshotLister()
	withAnti := lister.HavePodsWithRequiredAntiAffinityList()
	if !hasRequiredTerms(pod) && len(withAnti) == 0 {
		// The common case: nothing to check, and nothing worth parsing.
		return nil, framework.NewStatus(framework.Skip)
	}
	pi := framework.NewPodInfo(pod)
	if pi.ParseError != nil {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, pi.ParseError.Error())
	}
	s := &preFilterState{
		pod:          pi,
		existingAnti: topologyCounts{},
		affinity:     topologyCounts{},
		anti:         topologyCounts{},
		nsLabels:     pl.nsLabels(pod.Namespace),
	}
	for _, ni := range withAnti {
		for _, existing := range ni.PodsWithRequiredAntiAffinity {
			s.addExistingAnti(existing, ni.Node(), 1)
		}
	}
	if len(pi.RequiredAffinityTerms) == 0 && len(pi.RequiredAntiAffinityTerms) == 0 {
		if len(s.existingAnti) == 0 {
			// No placed pod's anti-affinity selects the pod: kube-scheduler
			// skips Filter then, so neither do pods nominated to a node,
			// whose anti-affinity AddPod would otherwise count, keep it out.
			return nil, framework.NewStatus(framework.Skip)
		}
	} else {
		for _, ni := range lister.List() {
			for _, existing := range ni.Pods {
				s.addIncomingTerms(existing.Pod, pl.nsLabels(existing.Pod.Namespace), ni.Node(), 1)
			}
		}
	}
	state.Write(preFilterKey, s)
	return nil, nil
}

func hasRequiredTerms(pod *v1.Pod) bool {
	a := pod.Spec.Affinity
	return a != nil && ((a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0) ||
		(a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0))
}

func hasPreferredTerms(pod *v1.Pod) bool {
	a := pod.Spec.Affinity
	return a != nil && ((a.PodAffinity != nil && len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0) ||
		(a.PodAntiAffinity != nil && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0))
}

// addExistingAnti counts the domains where existing's anti-affinity selects the incoming pod.
func (s *preFilterState) addExistingAnti(existing *framework.PodInfo, node *v1.Node, delta int64) {
	for i := range existing.RequiredAntiAffinityTerms {
		t := &existing.RequiredAntiAffinityTerms[i]
		if t.Matches(s.pod.Pod, s.nsLabels) {
			s.existingAnti.update(node, t.TopologyKey, delta)
		}
	}
}

// addIncomingTerms counts existing in the domains of the incoming pod's terms it satisfies.
func (s *preFilterState) addIncomingTerms(existing *v1.Pod, nsLabels labels.Set, node *v1.Node, delta int64) {
	if len(s.pod.RequiredAffinityTerms) > 0 && matchesAll(s.pod.RequiredAffinityTerms, existing, nsLabels) {
		for _, t := range s.pod.RequiredAffinityTerms {
			s.affinity.update(node, t.TopologyKey, delta)
		}
	}
	for i := range s.pod.RequiredAntiAffinityTerms {
		t := &s.pod.RequiredAntiAffinityTerms[i]
		if t.Matches(existing, nsLabels) {
			s.anti.update(node, t.TopologyKey, delta)
		}
	}
}

func matchesAll(terms []framework.AffinityTerm, pod *v1.Pod, nsLabels labels.Set) bool {
	for i := range terms {
		if !terms[i].Matches(pod, nsLabels) {
			return false
		}
	}
	return true
}

// AddPod implements framework.PreFilterExtensions.
func (pl *InterPodAffinity) AddPod(_ context.Context, state *framework.CycleState, _ *v1.Pod, add *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	return pl.updateWith(state, add, ni, 1)
}

// RemovePod implements framework.PreFilterExtensions.
func (pl *InterPodAffinity) RemovePod(_ context.Context, state *framework.CycleState, _ *v1.Pod, rm *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	return pl.updateWith(state, rm, ni, -1)
}

func (pl *InterPodAffinity) updateWith(state *framework.CycleState, pi *framework.PodInfo, ni *framework.NodeInfo, delta int64) *framework.Status {
	s, err := readPreFilter(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.addExistingAnti(pi, ni.Node(), delta)
	s.addIncomingTerms(pi.Pod, pl.nsLabels(pi.Pod.Namespace), ni.Node(), delta)
	return nil
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

// Filter applies the three rules in kube-scheduler's order: the pod's
// affinity, the pod's anti-affinity, placed pods' anti-affinity. The order
// decides the reported reason and code when several fail: an affinity miss is
// UnschedulableAndUnresolvable, so preemption leaves such a node alone.
func (pl *InterPodAffinity) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	s, err := readPreFilter(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	node := ni.Node()
	if !s.satisfiesAffinity(node) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
	}
	for _, t := range s.pod.RequiredAntiAffinityTerms {
		if v, ok := node.Labels[t.TopologyKey]; ok && s.anti[topologyPair{t.TopologyKey, v}] > 0 {
			return framework.NewStatus(framework.Unschedulable, ErrReasonAntiAffinityRulesNotMatch)
		}
	}
	if s.existingAntiOn(node) {
		return framework.NewStatus(framework.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
	}
	return nil
}

// existingAntiOn reports whether a placed pod's anti-affinity excludes the
// pod from a domain node is in. It walks the node's labels or the domains,
// whichever are fewer: a workload keeping one pod per node has as many
// domains as replicas, and walking them on every node would make filtering
// quadratic in the cluster's size.
func (s *preFilterState) existingAntiOn(node *v1.Node) bool {
	if len(s.existingAnti) > len(node.Labels) {
		for k, v := range node.Labels {
			if s.existingAnti[topologyPair{k, v}] > 0 {
				return true
			}
		}
		return false
	}
	for p, n := range s.existingAnti {
		if v, ok := node.Labels[p.key]; ok && v == p.value && n > 0 {
			return true
		}
	}
	return false
}

func (s *preFilterState) satisfiesAffinity(node *v1.Node) bool {
	terms := s.pod.RequiredAffinityTerms
	if len(terms) == 0 {
		return true
	}
	ok := true
	for _, t := range terms {
		v, has := node.Labels[t.TopologyKey]
		if !has || s.affinity[topologyPair{t.TopologyKey, v}] <= 0 {
			ok = false
			break
		}
	}
	if ok {
		return true
	}
	// The first pod of a group that selects itself may go anywhere that has
	// the topology labels; otherwise a self-affine group could never start.
	if len(s.affinity) == 0 && matchesAll(terms, s.pod.Pod, s.nsLabels) {
		for _, t := range terms {
			if _, has := node.Labels[t.TopologyKey]; !has {
				return false
			}
		}
		return true
	}
	return false
}
