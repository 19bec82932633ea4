package nodeaffinity

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/skiffkube/skiff/scheduler/framework"
)

const (
	// Name is the plugin's registry name.
	Name = "NodeAffinity"
	// ErrReasonPod is the Filter reason for a node failing the pod's selector or required affinity.
	ErrReasonPod = "node(s) didn't match Pod's node affinity/selector"
	// ErrReasonEnforced is the Filter reason for a node failing the
	// profile's added required affinity.
	ErrReasonEnforced = "node(s) didn't match scheduler-enforced node affinity"
	// ErrReasonConflict is the PreFilter reason when the required terms'
	// node-name requirements allow no node.
	ErrReasonConflict = "pod affinity terms conflict"

	preFilterKey framework.StateKey = "PreFilter" + Name
	preScoreKey  framework.StateKey = "PreScore" + Name
)

type preFilterState struct {
	required nodeaffinity.RequiredNodeAffinity
}

func (s *preFilterState) Clone() framework.StateData { return s }

type preScoreState struct {
	preferred *nodeaffinity.PreferredSchedulingTerms
}

func (s *preScoreState) Clone() framework.StateData { return s }

// Args are kube-scheduler's NodeAffinityArgs.
type Args struct {
	// AddedAffinity applies to every pod the profile schedules, on top of
	// the pod's own: its required terms filter the nodes (before the pod's
	// selector and affinity), its preferred terms are scored with the pod's.
	AddedAffinity *v1.NodeAffinity
}

// Validate checks the added terms as kube-scheduler's
// ValidateNodeAffinityArgs does, the errors' fields under path (the
// args' own, nil for paths from addedAffinity).
func (a Args) Validate(path *field.Path) error {
	_, _, err := a.parse(path)
	return err
}

// parse parses the added required selector and preferred terms; either is
// nil when not given.
func (a Args) parse(path *field.Path) (*nodeaffinity.NodeSelector, *nodeaffinity.PreferredSchedulingTerms, error) {
	if a.AddedAffinity == nil {
		return nil, nil, nil
	}
	var (
		required  *nodeaffinity.NodeSelector
		preferred *nodeaffinity.PreferredSchedulingTerms
		errs      []error
		err       error
	)
	added := path.Child("addedAffinity")
	if ns := a.AddedAffinity.RequiredDuringSchedulingIgnoredDuringExecution; ns != nil {
		if required, err = nodeaffinity.NewNodeSelector(ns, field.WithPath(added.Child("requiredDuringSchedulingIgnoredDuringExecution"))); err != nil {
			errs = append(errs, err)
		}
	}
	if terms := a.AddedAffinity.PreferredDuringSchedulingIgnoredDuringExecution; len(terms) != 0 {
		if preferred, err = nodeaffinity.NewPreferredSchedulingTerms(terms, field.WithPath(added.Child("preferredDuringSchedulingIgnoredDuringExecution"))); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, nil, utilerrors.Flatten(utilerrors.NewAggregate(errs))
	}
	return required, preferred, nil
}

// NodeAffinity implements PreFilter, Filter, PreScore and Score.
type NodeAffinity struct {
	// addedRequired and addedPreferred are the profile's added affinity;
	// nil when it has none.
	addedRequired  *nodeaffinity.NodeSelector
	addedPreferred *nodeaffinity.PreferredSchedulingTerms
}

// New builds the plugin; args are Args (or none).
func New(args any, _ framework.Handle) (framework.Plugin, error) {
	a, _, err := framework.PluginArgs[Args](Name, args)
	if err != nil {
		return nil, err
	}
	pl := &NodeAffinity{}
	if pl.addedRequired, pl.addedPreferred, err = a.parse(nil); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return pl, nil
}

// Name implements framework.Plugin.
func (*NodeAffinity) Name() string { return Name }

// PreFilter parses the pod's selector and required affinity once; a pod with
// neither skips Filter, unless the profile adds a required affinity. As
// kube-scheduler's, when every required term of the pod pins the node by
// name (matchFields metadata.name In [...], as DaemonSet pods do), only
// those nodes are worth filtering; terms whose name requirements leave no
// node at all make the pod unschedulable everywhere. The added terms narrow
// nothing here, as in kube-scheduler: Filter applies them.
func (pl *NodeAffinity) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	var required *v1.NodeSelector
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		required = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	if len(pod.Spec.NodeSelector) == 0 && required == nil && pl.addedRequired == nil {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterKey, &preFilterState{required: nodeaffinity.GetRequiredNodeAffinity(pod)})
	if required == nil || len(required.NodeSelectorTerms) == 0 {
		return nil, nil
	}
	names := map[string]bool{}
	for _, term := range required.NodeSelectorTerms {
		termNames := namesOfTerm(term)
		if termNames == nil {
			// Terms are ORed: one not naming nodes lets any node through.
			return nil, nil
		}
		for n := range termNames {
			names[n] = true
		}
	}
	if len(names) == 0 {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonConflict)
	}
	return &framework.PreFilterResult{NodeNames: names}, nil
}

// namesOfTerm returns the node names a term's metadata.name In requirements
// allow (they are ANDed, so intersected), or nil when it has none.
func namesOfTerm(term v1.NodeSelectorTerm) map[string]bool {
	var names map[string]bool
	for _, r := range term.MatchFields {
		if r.Key != metav1.ObjectNameField || r.Operator != v1.NodeSelectorOpIn {
			continue
		}
		next := make(map[string]bool, len(r.Values))
		for _, v := range r.Values {
			if names == nil || names[v] {
				next[v] = true
			}
		}
		names = next
	}
	return names
}

// EventsToRegister: only a node that appears, or whose labels change, can
// start matching the pod's selector and required affinity, or the
// profile's added one.
func (pl *NodeAffinity) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeLabel}, QueueingHintFn: pl.isSchedulableAfterNodeChange},
	}
}

// isSchedulableAfterNodeChange queues the pod when a node added matches the
// profile's added affinity and the pod's selector and required terms, or an
// updated node matches them all and did not before. kube-scheduler v1.33
// compares only the pod's own terms of the old node, and so skips a node
// relabelled into the added affinity that the pod's terms matched already
// (a pod without any, say), leaving the pod to the five-minute flush.
func (pl *NodeAffinity) isSchedulableAfterNodeChange(pod *v1.Pod, oldObj, newObj any) (framework.QueueingHint, error) {
	oldNode, newNode, err := framework.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newNode == nil {
		return framework.Queue, errors.New("the event carries no node")
	}
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	matches := func(n *v1.Node) (bool, error) {
		if pl.addedRequired != nil && !pl.addedRequired.Match(n) {
			return false, nil
		}
		return required.Match(n)
	}
	ok, err := matches(newNode)
	if err != nil {
		return framework.Queue, err
	}
	if !ok {
		return framework.QueueSkip, nil
	}
	if oldNode == nil {
		return framework.Queue, nil
	}
	matched, err := matches(oldNode)
	if err != nil {
		return framework.Queue, err
	}
	if matched {
		// It matched already, so it was not this plugin that refused it.
		return framework.QueueSkip, nil
	}
	return framework.Queue, nil
}

// Filter rejects nodes that fail the profile's added required affinity
// (first, with its own reason) or the pod's selector or required terms. A
// term of the pod's that cannot be parsed matches no node (the API server
// should have refused it).
func (pl *NodeAffinity) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	if pl.addedRequired != nil && !pl.addedRequired.Match(ni.Node()) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonEnforced)
	}
	d, err := state.Read(preFilterKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	s, ok := d.(*preFilterState)
	if !ok {
		return framework.AsStatus(fmt.Errorf("%s: unexpected state %T", Name, d))
	}
	if match, _ := s.required.Match(ni.Node()); !match {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPod)
	}
	return nil
}

// PreScore parses the pod's preferred terms; with none, and none added by
// the profile, Score is skipped.
func (pl *NodeAffinity) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	var terms *nodeaffinity.PreferredSchedulingTerms
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		var err error
		if terms, err = nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution); err != nil {
			return framework.AsStatus(fmt.Errorf("parsing preferred node affinity: %w", err))
		}
	}
	if terms == nil && pl.addedPreferred == nil {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preScoreKey, &preScoreState{preferred: terms})
	return nil
}

// Score sums the weights of the preferred terms the node matches, the
// pod's and the profile's added ones.
func (pl *NodeAffinity) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	d, err := state.Read(preScoreKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	s, ok := d.(*preScoreState)
	if !ok {
		return 0, framework.AsStatus(fmt.Errorf("%s: unexpected state %T", Name, d))
	}
	var score int64
	if pl.addedPreferred != nil {
		score += pl.addedPreferred.Score(ni.Node())
	}
	if s.preferred != nil {
		score += s.preferred.Score(ni.Node())
	}
	return score, nil
}

// NormalizeScore scales so the best node gets MaxNodeScore.
func (*NodeAffinity) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores []framework.NodeScore) *framework.Status {
	return framework.DefaultNormalizeScore(framework.MaxNodeScore, false, scores)
}
