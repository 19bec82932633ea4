package interpodaffinity

import (
	"errors"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// EventsToRegister, as kube-scheduler's: a placed pod appearing, relabelled
// or deleted changes which terms are met, and a node appearing or
// relabelled changes the topology domains.
func (pl *InterPodAffinity) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Add | framework.UpdatePodLabel | framework.Delete}, QueueingHintFn: pl.isSchedulableAfterPodChange},
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeLabel}, QueueingHintFn: pl.isSchedulableAfterNodeChange},
	}
}

// isSchedulableAfterPodChange queues pod when the placed pod that appeared,
// changed labels or went may have lifted what kept pod out: a pod now
// meeting all of pod's affinity terms, or a pod gone from (or relabelled out
// of) one of its anti-affinity terms. Upstream v1.33 also misses two cases
// it has since fixed, which are queued here: a deleted pod whose own
// anti-affinity selected pod, and a deleted pod matching just one of
// several anti-affinity terms (one is enough to repel).
func (pl *InterPodAffinity) isSchedulableAfterPodChange(pod *v1.Pod, oldObj, newObj any) (framework.QueueingHint, error) {
	oldPod, newPod, err := framework.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if oldPod == nil && newPod == nil {
		return framework.Queue, errors.New("the event carries no pod")
	}
	if !counted(oldPod, newPod) {
		return framework.QueueSkip, nil
	}
	pi := framework.NewPodInfo(pod)
	if pi.ParseError != nil {
		return framework.Queue, pi.ParseError
	}
	affinity, anti := pi.RequiredAffinityTerms, pi.RequiredAntiAffinityTerms

	switch {
	case oldPod != nil && newPod != nil:
		// One placed pod must meet all affinity terms at once.
		ns := pl.nsLabels(newPod.Namespace)
		if len(affinity) > 0 && !matchesAll(affinity, oldPod, ns) && matchesAll(affinity, newPod, ns) {
			return framework.Queue, nil
		}
		for i := range anti {
			if anti[i].Matches(oldPod, ns) && !anti[i].Matches(newPod, ns) {
				return framework.Queue, nil
			}
		}
		return framework.QueueSkip, nil
	case newPod != nil:
		if len(affinity) > 0 && matchesAll(affinity, newPod, pl.nsLabels(newPod.Namespace)) {
			return framework.Queue, nil
		}
		return framework.QueueSkip, nil
	}
	ns := pl.nsLabels(oldPod.Namespace)
	for i := range anti {
		if anti[i].Matches(oldPod, ns) {
			return framework.Queue, nil
		}
	}
	deleted := framework.NewPodInfo(oldPod)
	podNS := pl.nsLabels(pod.Namespace)
	for i := range deleted.RequiredAntiAffinityTerms {
		if deleted.RequiredAntiAffinityTerms[i].Matches(pod, podNS) {
			return framework.Queue, nil
		}
	}
	return framework.QueueSkip, nil
}

// isSchedulableAfterNodeChange queues pod for a node that may open a
// domain to it: for affinity, a node added with a term's topology label or
// one gaining or changing it; for anti-affinity, any node added (one
// without the label is free of it; one with it may join an empty domain,
// which the hint does not look up), or one losing or changing the label.
func (pl *InterPodAffinity) isSchedulableAfterNodeChange(pod *v1.Pod, oldObj, newObj any) (framework.QueueingHint, error) {
	oldNode, newNode, err := framework.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newNode == nil {
		return framework.Queue, errors.New("the event carries no added or updated node")
	}
	pi := framework.NewPodInfo(pod)
	if pi.ParseError != nil {
		return framework.Queue, pi.ParseError
	}
	for _, t := range pi.RequiredAffinityTerms {
		newValue, newHas := newNode.Labels[t.TopologyKey]
		if !newHas {
			continue
		}
		if oldNode == nil {
			return framework.Queue, nil
		}
		if oldValue, oldHas := oldNode.Labels[t.TopologyKey]; !oldHas || oldValue != newValue {
			return framework.Queue, nil
		}
	}
	for _, t := range pi.RequiredAntiAffinityTerms {
		if oldNode == nil {
			return framework.Queue, nil
		}
		oldValue, oldHas := oldNode.Labels[t.TopologyKey]
		if !oldHas {
			continue
		}
		if newValue, newHas := newNode.Labels[t.TopologyKey]; !newHas || oldValue != newValue {
			return framework.Queue, nil
		}
	}
	return framework.QueueSkip, nil
}

// counted reports whether the changed pod counted for the terms of the pods
// it may help: only placed pods do, and, once deleted, a nominated one (the
// handlers tell its deletion only to the lower priorities its nomination
// held back, whose filters counted it). Upstream v1.33 skips the nominated
// pod here, which leaves such pods waiting for the periodic flush.
func counted(oldPod, newPod *v1.Pod) bool {
	if newPod != nil {
		return newPod.Spec.NodeName != "" && (oldPod == nil || oldPod.Spec.NodeName != "")
	}
	return oldPod.Spec.NodeName != "" || oldPod.Status.NominatedNodeName != ""
}
