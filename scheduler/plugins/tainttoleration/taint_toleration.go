package tainttoleration

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/skiffkube/skiff/scheduler/framework"
)

const (
	// Name is the plugin's registry name.
	Name = "TaintToleration"

	preScoreKey framework.StateKey = "PreScore" + Name
)

// ErrReasonUntolerated renders the Filter reason for one taint, in
// kube-scheduler's words: "node(s) had untolerated taint {key: value}".
func ErrReasonUntolerated(t v1.Taint) string {
	return fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value)
}

// TaintToleration implements Filter, PreScore and Score.
type TaintToleration struct{}

// New builds the plugin.
func New(_ any, _ framework.Handle) (framework.Plugin, error) { return &TaintToleration{}, nil }

// Name implements framework.Plugin.
func (*TaintToleration) Name() string { return Name }

func doNotSchedule(t *v1.Taint) bool {
	return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
}

// Filter rejects a node with an untolerated NoSchedule/NoExecute taint.
func (*TaintToleration) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	taint, untolerated := untoleratedTaint(pod, ni.Taints())
	if !untolerated {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUntolerated(taint))
}

// untoleratedTaint finds a NoSchedule/NoExecute taint pod does not tolerate.
func untoleratedTaint(pod *v1.Pod, taints []v1.Taint) (v1.Taint, bool) {
	if len(taints) == 0 {
		return v1.Taint{}, false
	}
	return corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), taints, pod.Spec.Tolerations, doNotSchedule, false)
}

// EventsToRegister: only a node that appears, or whose taints change, can
// stop having a taint the pod does not tolerate. (A pod's own new
// toleration reaches the queue as an update of the pod.)
func (*TaintToleration) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeTaint}, QueueingHintFn: isSchedulableAfterNodeChange},
	}
}

// isSchedulableAfterNodeChange queues the pod when the node's taints, which
// it did not tolerate before (or the node is new), now all are tolerated.
func isSchedulableAfterNodeChange(pod *v1.Pod, oldObj, newObj any) (framework.QueueingHint, error) {
	oldNode, newNode, err := framework.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newNode == nil {
		return framework.Queue, errNoNode
	}
	wasUntolerated := true
	if oldNode != nil {
		_, wasUntolerated = untoleratedTaint(pod, oldNode.Spec.Taints)
	}
	if _, untolerated := untoleratedTaint(pod, newNode.Spec.Taints); wasUntolerated && !untolerated {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

var errNoNode = errors.New("the event carries no node")

type preScoreState []v1.Toleration

func (s preScoreState) Clone() framework.StateData { return s }

// PreScore keeps the tolerations that can tolerate PreferNoSchedule.
func (*TaintToleration) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	var tols preScoreState
	for _, t := range pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			tols = append(tols, t)
		}
	}
	state.Write(preScoreKey, tols)
	return nil
}

// Score counts untolerated PreferNoSchedule taints (fewer is better; NormalizeScore reverses).
func (*TaintToleration) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	d, err := state.Read(preScoreKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	tols, ok := d.(preScoreState)
	if !ok {
		return 0, framework.AsStatus(fmt.Errorf("%s: unexpected state %T", Name, d))
	}
	var n int64
	taints := ni.Taints()
	for i := range taints {
		t := &taints[i]
		if t.Effect == v1.TaintEffectPreferNoSchedule && !corev1helpers.TolerationsTolerateTaint(klog.Background(), tols, t, false) {
			n++
		}
	}
	return n, nil
}

// NormalizeScore gives the node with the fewest untolerated taints MaxNodeScore.
func (*TaintToleration) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores []framework.NodeScore) *framework.Status {
	return framework.DefaultNormalizeScore(framework.MaxNodeScore, true, scores)
}
