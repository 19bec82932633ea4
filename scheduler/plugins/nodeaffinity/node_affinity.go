package nodeaffinity

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/skiffkube/skiff/scheduler/framework"
)

const (
	// Name is the plugin's registry name.
	Name = "NodeAffinity"
	// ErrReasonPod is the Filter reason for a node failing the pod's selector or required affinity.
	ErrReasonPod = "node(s) didn't match Pod's node affinity/selector"
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

// NodeAffinity implements PreFilter, Filter, PreScore and Score.
type NodeAffinity struct{}

// New builds the plugin.
func New(_ any, _ framework.Handle) (framework.Plugin, error) { return &NodeAffinity{}, nil }

// Name implements framework.Plugin.
func (*NodeAffinity) Name() string { return Name }

// PreFilter parses the pod's selector and required affinity once; a pod with
// neither skips Filter. As kube-scheduler's, when every required term pins
// the node by name (matchFields metadata.name In [...], as DaemonSet pods
// do), only those nodes are worth filtering; terms whose name requirements
// leave no node at all make the pod unschedulable everywhere.
func (*NodeAffinity) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	var required *v1.NodeSelector
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		required = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	if len(pod.Spec.NodeSelector) == 0 && required == nil {
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
// start matching the pod's selector and required affinity.
func (*NodeAffinity) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeLabel}, QueueingHintFn: isSchedulableAfterNodeChange},
	}
}

// isSchedulableAfterNodeChange queues the pod when a node added matches its
// selector and required terms, or an updated node matches them and did not
// before.
func isSchedulableAfterNodeChange(pod *v1.Pod, oldObj, newObj any) (framework.QueueingHint, error) {
	oldNode, newNode, err := framework.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newNode == nil {
		return framework.Queue, errors.New("the event carries no node")
	}
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	matches, err := required.Match(newNode)
	if err != nil {
		return framework.Queue, err
	}
	if !matches {
		return framework.QueueSkip, nil
	}
	if oldNode == nil {
		return framework.Queue, nil
	}
	matched, err := required.Match(oldNode)
	if err != nil {
		return framework.Queue, err
	}
	if matched {
		// It matched already, so it was not this plugin that refused it.
		return framework.QueueSkip, nil
	}
	return framework.Queue, nil
}

// Filter rejects nodes that fail the selector or the required terms. A term
// that cannot be parsed matches no node (the API server should have refused it).
func (*NodeAffinity) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) *framework.Status {
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

// PreScore parses the preferred terms; a pod without any skips Score.
func (*NodeAffinity) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	if pod.Spec.Affinity == nil || pod.Spec.Affinity.NodeAffinity == nil ||
		len(pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	terms, err := nodeaffinity.NewPreferredSchedulingTerms(pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("parsing preferred node affinity: %w", err))
	}
	state.Write(preScoreKey, &preScoreState{preferred: terms})
	return nil
}

// Score sums the weights of the preferred terms the node matches.
func (*NodeAffinity) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	d, err := state.Read(preScoreKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	s, ok := d.(*preScoreState)
	if !ok {
		return 0, framework.AsStatus(fmt.Errorf("%s: unexpected state %T", Name, d))
	}
	return s.preferred.Score(ni.Node()), nil
}

// NormalizeScore scales so the best node gets MaxNodeScore.
func (*NodeAffinity) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores []framework.NodeScore) *framework.Status {
	return framework.DefaultNormalizeScore(framework.MaxNodeScore, false, scores)
}
