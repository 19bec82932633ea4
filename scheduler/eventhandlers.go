package scheduler

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/queue"
)

func assigned(p *v1.Pod) bool { return p.Spec.NodeName != "" }

func terminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

func (s *Scheduler) responsibleFor(p *v1.Pod) bool {
	return p.Spec.SchedulerName == s.cfg.SchedulerName
}

// requeueFor selects the queued pods that evt, the change from oldObj to
// newObj, may help: those that one of the plugins that rejected them, asked
// through its queueing hint, answers Queue for (kube-scheduler's
// isPodWorthRequeuing). A pod in flight keeps the selector and is judged
// when its attempt fails, once its rejecting plugins are known.
func (s *Scheduler) requeueFor(evt framework.ClusterEvent, oldObj, newObj any) func(*queue.QueuedPodInfo) bool {
	return func(p *queue.QueuedPodInfo) bool {
		for name := range p.UnschedulablePlugins {
			hint, err := s.fwk.QueueingHint(name, p.Pod, evt, oldObj, newObj)
			if err != nil {
				s.log.Error("queueing hint failed; retrying the pod", "pod", p.Key(), "err", err)
			}
			if hint == framework.Queue {
				return true
			}
		}
		return false
	}
}

// event tells the queue of evt.
func (s *Scheduler) event(evt framework.ClusterEvent, oldObj, newObj any) {
	s.queue.MoveAllToActiveOrBackoffQueue(s.requeueFor(evt, oldObj, newObj))
}

func (s *Scheduler) addEventHandlers(podInformer, nodeInformer cache.SharedIndexInformer) error {
	if _, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.onPodAdd(obj) },
		UpdateFunc: func(oldObj, newObj any) { s.onPodUpdate(oldObj, newObj) },
		DeleteFunc: func(obj any) { s.onPodDelete(obj) },
	}); err != nil {
		return fmt.Errorf("scheduler: pod event handler: %w", err)
	}
	if _, err := nodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.onNodeAdd(obj) },
		UpdateFunc: func(oldObj, newObj any) { s.onNodeUpdate(oldObj, newObj) },
		DeleteFunc: func(obj any) { s.onNodeDelete(obj) },
	}); err != nil {
		return fmt.Errorf("scheduler: node event handler: %w", err)
	}
	return nil
}

func (s *Scheduler) onPodAdd(obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	switch {
	case terminal(pod):
	case assigned(pod):
		s.cache.AddPod(pod)
		s.event(framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Add}, nil, pod)
	case s.responsibleFor(pod):
		// As kube-scheduler's queue: a new pod's nomination counts once
		// it enters the active queue, not while scheduling gates hold it
		// (its updates count, gated or not, as there).
		if s.queue.Add(pod) {
			s.nominator.add(pod, "")
		}
	}
}

func (s *Scheduler) onPodUpdate(oldObj, newObj any) {
	oldPod, ok1 := oldObj.(*v1.Pod)
	pod, ok2 := newObj.(*v1.Pod)
	if !ok1 || !ok2 {
		return
	}
	switch {
	case assigned(pod) && terminal(pod):
		s.nominator.delete(pod)
		// A finished pod holds nothing any more.
		if _, known := s.cache.GetPod(pod); known {
			s.cache.RemovePod(pod)
			s.event(framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Delete}, pod, nil)
		}
	case assigned(pod) && !assigned(oldPod):
		// Bound (by us or anyone): it leaves the queue.
		s.queue.Delete(pod)
		s.nominator.delete(pod)
		s.cache.UpdatePod(oldPod, pod)
		s.event(framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Add}, nil, pod)
	case assigned(pod):
		s.cache.UpdatePod(oldPod, pod)
		// As kube-scheduler's assigned-pod update events: smaller requests
		// (an in-place resize) leave room on the node, and new labels change
		// which affinity and spreading terms the pod counts for.
		if !equality.Semantic.DeepEqual(oldPod.Labels, pod.Labels) {
			s.event(framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.UpdatePodLabel}, oldPod, pod)
		}
		if requestsScaledDown(oldPod, pod) {
			s.event(framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.UpdatePodScaleDown}, oldPod, pod)
		}
	case terminal(pod):
		s.queue.Delete(pod)
		s.nominator.delete(pod)
	case s.responsibleFor(pod):
		if s.cache.IsAssumedPod(pod) {
			// Our own bind is in flight; the informer just hasn't seen it yet.
			return
		}
		s.queue.Update(oldPod, pod)
		s.nominator.update(oldPod, pod)
		if n := oldPod.Status.NominatedNodeName; n != "" && n != pod.Status.NominatedNodeName {
			// Nominated elsewhere or no longer: the old node's room is free.
			s.nominationGone(oldPod)
		}
	}
}

// requestsScaledDown reports whether newPod requests less of some resource
// than oldPod did, or no longer requests it at all.
func requestsScaledDown(oldPod, newPod *v1.Pod) bool {
	before := resourcehelper.PodRequests(oldPod, resourcehelper.PodResourcesOptions{})
	after := resourcehelper.PodRequests(newPod, resourcehelper.PodResourcesOptions{})
	for name, q := range before {
		if n, ok := after[name]; !ok || n.Cmp(q) < 0 {
			return true
		}
	}
	return false
}

func (s *Scheduler) onPodDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	s.nominator.delete(pod)
	if cached, known := s.cache.GetPod(pod); known || assigned(pod) {
		if known {
			// The cache's copy says where the pod was (an assumed pod's
			// informer copy has no node yet): the hints judge what it freed.
			pod = cached
		}
		s.cache.RemovePod(pod)
		s.event(framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Delete}, pod, nil)
		return
	}
	s.queue.Delete(pod)
	if pod.Status.NominatedNodeName != "" {
		s.nominationGone(pod)
	}
}

// nominationGone tells the pods that pod's nomination held back that it no
// longer holds its room. The filters of pods of lower or equal priority
// counted the nominated pod as if placed on its node, so they, and only
// they, are told of an assigned-pod deletion (kube-scheduler's
// deletePodFromSchedulingQueue and updatePodInSchedulingQueue).
func (s *Scheduler) nominationGone(pod *v1.Pod) {
	prio := corev1helpers.PodPriority(pod)
	requeue := s.requeueFor(framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Delete}, pod, nil)
	s.queue.MoveAllToActiveOrBackoffQueue(func(p *queue.QueuedPodInfo) bool {
		return corev1helpers.PodPriority(p.Pod) <= prio && requeue(p)
	})
}

func (s *Scheduler) onNodeAdd(obj any) {
	node, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	s.cache.AddNode(node)
	s.event(framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add}, nil, node)
}

func (s *Scheduler) onNodeUpdate(oldObj, newObj any) {
	oldNode, ok1 := oldObj.(*v1.Node)
	node, ok2 := newObj.(*v1.Node)
	if !ok1 || !ok2 {
		return
	}
	s.cache.UpdateNode(oldNode, node)
	for _, action := range nodeUpdateActions(oldNode, node) {
		s.event(framework.ClusterEvent{Resource: framework.Node, ActionType: action}, oldNode, node)
	}
}

// nodeUpdateActions names the scheduling-relevant changes from a to b, as
// kube-scheduler's NodeSchedulingPropertiesChange, one event each. Heartbeats
// are none of them; a cordon is none either (it makes no pod schedulable),
// while an uncordon counts as a taint change, as there. Conditions and
// annotations, which no plugin here reads, and images, which only score,
// are left out.
func nodeUpdateActions(a, b *v1.Node) []framework.ActionType {
	var actions []framework.ActionType
	if !equality.Semantic.DeepEqual(a.Status.Allocatable, b.Status.Allocatable) {
		actions = append(actions, framework.UpdateNodeAllocatable)
	}
	if !equality.Semantic.DeepEqual(a.Labels, b.Labels) {
		actions = append(actions, framework.UpdateNodeLabel)
	}
	if (a.Spec.Unschedulable && !b.Spec.Unschedulable) || !equality.Semantic.DeepEqual(a.Spec.Taints, b.Spec.Taints) {
		actions = append(actions, framework.UpdateNodeTaint)
	}
	return actions
}

func (s *Scheduler) onNodeDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if node, ok := obj.(*v1.Node); ok {
		s.cache.RemoveNode(node)
		// A node gone can raise the least-populated domain's count, so a
		// spread constraint may be met now (PodTopologySpread registers
		// for it).
		s.event(framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Delete}, node, nil)
	}
}
