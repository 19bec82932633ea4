package podtopologyspread

import (
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// EventsToRegister, as kube-scheduler's: a placed pod added, relabelled or
// deleted changes the counts, and a node appearing, going, relabelled or
// retainted changes the domains.
func (pl *PodTopologySpread) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Add | framework.UpdatePodLabel | framework.Delete}, QueueingHintFn: pl.isSchedulableAfterPodChange},
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.Delete | framework.UpdateNodeLabel | framework.UpdateNodeTaint}, QueueingHintFn: pl.isSchedulableAfterNodeChange},
	}
}

// involved reports whether changed can count in pod's spreading: pod
// itself, or a pod of its namespace that is placed (or, once deleted, was
// nominated: the handlers tell that deletion only to the lower priorities
// its nomination held back, whose filters counted it; upstream v1.33 skips
// it).
func involved(changed, pod *v1.Pod, deleted bool) bool {
	if changed.UID == pod.UID {
		return true
	}
	if changed.Namespace != pod.Namespace {
		return false
	}
	return changed.Spec.NodeName != "" || (deleted && changed.Status.NominatedNodeName != "")
}

func anySelects(cs []constraint, podLabels map[string]string) bool {
	for i := range cs {
		if cs[i].selector.Matches(labels.Set(podLabels)) {
			return true
		}
	}
	return false
}

// isSchedulableAfterPodChange queues pod when a pod its hard constraints
// select was placed or deleted, or a placed pod's relabelling changed
// whether some constraint selects it.
func (pl *PodTopologySpread) isSchedulableAfterPodChange(pod *v1.Pod, oldObj, newObj any) (framework.QueueingHint, error) {
	oldPod, newPod, err := framework.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if oldPod == nil && newPod == nil {
		return framework.Queue, errors.New("the event carries no pod")
	}
	if (newPod != nil && !involved(newPod, pod, false)) || (oldPod != nil && !involved(oldPod, pod, newPod == nil)) {
		return framework.QueueSkip, nil
	}
	cs, err := pl.podConstraints(pod, v1.DoNotSchedule)
	if err != nil {
		return framework.Queue, err
	}
	switch {
	case oldPod != nil && newPod != nil:
		if equality.Semantic.DeepEqual(oldPod.Labels, newPod.Labels) {
			return framework.QueueSkip, nil
		}
		for i := range cs {
			if cs[i].selector.Matches(labels.Set(oldPod.Labels)) != cs[i].selector.Matches(labels.Set(newPod.Labels)) {
				return framework.Queue, nil
			}
		}
		return framework.QueueSkip, nil
	case newPod != nil:
		if anySelects(cs, newPod.Labels) {
			return framework.Queue, nil
		}
		return framework.QueueSkip, nil
	}
	if anySelects(cs, oldPod.Labels) {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

// isSchedulableAfterNodeChange queues pod for a node that counts for its
// hard constraints (has all their topology labels) appearing or going, one
// starting or ceasing to count, or one that counts whose topology values
// or taints changed.
func (pl *PodTopologySpread) isSchedulableAfterNodeChange(pod *v1.Pod, oldObj, newObj any) (framework.QueueingHint, error) {
	oldNode, newNode, err := framework.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if oldNode == nil && newNode == nil {
		return framework.Queue, errors.New("the event carries no node")
	}
	cs, err := pl.podConstraints(pod, v1.DoNotSchedule)
	if err != nil {
		return framework.Queue, err
	}
	switch {
	case oldNode != nil && newNode != nil:
		oldCounts, newCounts := hasAllKeys(oldNode, cs), hasAllKeys(newNode, cs)
		if oldCounts != newCounts {
			return framework.Queue, nil
		}
		if newCounts && (topologyValuesChanged(oldNode, newNode, cs) || !equality.Semantic.DeepEqual(oldNode.Spec.Taints, newNode.Spec.Taints)) {
			return framework.Queue, nil
		}
		return framework.QueueSkip, nil
	case newNode != nil:
		if hasAllKeys(newNode, cs) {
			return framework.Queue, nil
		}
		return framework.QueueSkip, nil
	}
	if hasAllKeys(oldNode, cs) {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

func topologyValuesChanged(a, b *v1.Node, cs []constraint) bool {
	for i := range cs {
		if a.Labels[cs[i].key] != b.Labels[cs[i].key] {
			return true
		}
	}
	return false
}
