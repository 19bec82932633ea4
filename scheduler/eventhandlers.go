package scheduler

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/skiffkube/skiff/scheduler/plugins/interpodaffinity"
	"github.com/skiffkube/skiff/scheduler/plugins/podtopologyspread"
	"github.com/skiffkube/skiff/scheduler/queue"
)

func assigned(p *v1.Pod) bool { return p.Spec.NodeName != "" }

func terminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

func (s *Scheduler) responsibleFor(p *v1.Pod) bool {
	return p.Spec.SchedulerName == s.cfg.SchedulerName
}

// rejectedBy selects queued pods last rejected by one of the named plugins:
// a placed pod can only help pods that failed on pod-to-pod rules.
func rejectedBy(names ...string) func(*queue.QueuedPodInfo) bool {
	return func(p *queue.QueuedPodInfo) bool {
		for _, n := range names {
			if p.UnschedulablePlugins.Has(n) {
				return true
			}
		}
		return false
	}
}

var podAffinityPlugins = rejectedBy(interpodaffinity.Name, podtopologyspread.Name)

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
		s.queue.MoveAllToActiveOrBackoffQueue(podAffinityPlugins)
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
			s.queue.MoveAllToActiveOrBackoffQueue(nil)
		}
	case assigned(pod) && !assigned(oldPod):
		// Bound (by us or anyone): it leaves the queue.
		s.queue.Delete(pod)
		s.nominator.delete(pod)
		s.cache.UpdatePod(oldPod, pod)
		s.queue.MoveAllToActiveOrBackoffQueue(podAffinityPlugins)
	case assigned(pod):
		s.cache.UpdatePod(oldPod, pod)
		// As kube-scheduler's assigned-pod update events: smaller requests
		// (an in-place resize) leave room on the node, and new labels change
		// which affinity and spreading terms the pod counts for.
		switch {
		case requestsScaledDown(oldPod, pod):
			s.queue.MoveAllToActiveOrBackoffQueue(nil)
		case !equality.Semantic.DeepEqual(oldPod.Labels, pod.Labels):
			s.queue.MoveAllToActiveOrBackoffQueue(podAffinityPlugins)
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
	if _, known := s.cache.GetPod(pod); known || assigned(pod) {
		s.cache.RemovePod(pod)
		s.queue.MoveAllToActiveOrBackoffQueue(nil)
		return
	}
	s.queue.Delete(pod)
}

func (s *Scheduler) onNodeAdd(obj any) {
	node, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	s.cache.AddNode(node)
	s.queue.MoveAllToActiveOrBackoffQueue(nil)
}

func (s *Scheduler) onNodeUpdate(oldObj, newObj any) {
	oldNode, ok1 := oldObj.(*v1.Node)
	node, ok2 := newObj.(*v1.Node)
	if !ok1 || !ok2 {
		return
	}
	s.cache.UpdateNode(oldNode, node)
	if schedulingRelevantChange(oldNode, node) {
		s.queue.MoveAllToActiveOrBackoffQueue(nil)
	}
}

// schedulingRelevantChange ignores heartbeats: only what a plugin reads
// (allocatable, labels, taints, cordon, images) can make a pod fit.
func schedulingRelevantChange(a, b *v1.Node) bool {
	return a.Spec.Unschedulable != b.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(a.Status.Allocatable, b.Status.Allocatable) ||
		!equality.Semantic.DeepEqual(a.Labels, b.Labels) ||
		!equality.Semantic.DeepEqual(a.Spec.Taints, b.Spec.Taints) ||
		len(a.Status.Images) != len(b.Status.Images)
}

func (s *Scheduler) onNodeDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if node, ok := obj.(*v1.Node); ok {
		s.cache.RemoveNode(node)
		// A node gone can raise the least-populated domain's count, so a
		// spread constraint may be met now (kube-scheduler's Node/Delete
		// event, which PodTopologySpread registers for).
		s.queue.MoveAllToActiveOrBackoffQueue(rejectedBy(podtopologyspread.Name))
	}
}
