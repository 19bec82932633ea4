package framework

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// QueueingHint is a plugin's verdict on one cluster event for one pod it
// rejected: may the event have made the pod schedulable?
type QueueingHint int

const (
	// QueueSkip: the event cannot reverse the plugin's rejection; the pod
	// keeps waiting.
	QueueSkip QueueingHint = iota
	// Queue: the event may make the pod schedulable; it is retried (after
	// its backoff).
	Queue
)

func (h QueueingHint) String() string {
	if h == QueueSkip {
		return "QueueSkip"
	}
	return "Queue"
}

// EventResource is the kind of object a cluster event is about.
type EventResource string

// The resources skiff's scheduler reports events for. Pod events are only
// about assigned pods (placed, changed, finished or deleted): a pending pod's
// own updates reach the queue through its Update, not through hints.
const (
	Node                  EventResource = "Node"
	AssignedPod           EventResource = "AssignedPod"
	PersistentVolumeClaim EventResource = "PersistentVolumeClaim"
	PersistentVolume      EventResource = "PersistentVolume"
	StorageClass          EventResource = "StorageClass"
)

// ActionType is what happened to the object, as a bit so that a plugin can
// register several at once. An event carries exactly one bit.
type ActionType uint32

const (
	Add ActionType = 1 << iota
	Delete
	// UpdateNodeAllocatable: the node's allocatable changed.
	UpdateNodeAllocatable
	// UpdateNodeLabel: the node's labels changed.
	UpdateNodeLabel
	// UpdateNodeTaint: the node's taints changed, or it was uncordoned (as
	// kube-scheduler, which reads spec.unschedulable as a taint; a cordon
	// makes no pod schedulable, so it is no event).
	UpdateNodeTaint
	// UpdatePodLabel: an assigned pod's labels changed.
	UpdatePodLabel
	// UpdatePodScaleDown: an assigned pod requests less of some resource.
	UpdatePodScaleDown

	// Update is every kind of update.
	Update = UpdateNodeAllocatable | UpdateNodeLabel | UpdateNodeTaint | UpdatePodLabel | UpdatePodScaleDown
	// All is every action.
	All = Add | Delete | Update
)

var actionNames = []string{"Add", "Delete", "UpdateNodeAllocatable", "UpdateNodeLabel", "UpdateNodeTaint", "UpdatePodLabel", "UpdatePodScaleDown"}

func (a ActionType) String() string {
	switch a {
	case Update:
		return "Update"
	case All:
		return "All"
	}
	var names []string
	for i, n := range actionNames {
		if a&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return fmt.Sprintf("ActionType(%d)", uint32(a))
	}
	return strings.Join(names, "|")
}

// ClusterEvent names a change in the cluster.
type ClusterEvent struct {
	Resource   EventResource
	ActionType ActionType
}

// Label is the event's name in metrics and logs, kube-scheduler's
// (resource then action: "NodeAdd", "AssignedPodDelete").
func (e ClusterEvent) Label() string { return string(e.Resource) + e.ActionType.String() }

// Match reports whether the event e is one that a plugin registering
// registered asked for.
func (e ClusterEvent) Match(registered ClusterEvent) bool {
	return e.Resource == registered.Resource && e.ActionType&registered.ActionType != 0
}

// QueueingHintFn answers for pod, which the plugin rejected, whether the
// change from oldObj to newObj may make it schedulable (oldObj is nil for an
// Add, newObj for a Delete). An error is taken as Queue: a pod must never be
// left waiting because a hint could not decide.
type QueueingHintFn func(pod *v1.Pod, oldObj, newObj any) (QueueingHint, error)

// ClusterEventWithHint is an event a plugin registers, with the hint that
// judges it; a nil QueueingHintFn always answers Queue.
type ClusterEventWithHint struct {
	Event          ClusterEvent
	QueueingHintFn QueueingHintFn
}

// EnqueueExtensions is implemented by plugins that say which cluster events
// may make a pod they rejected schedulable (kube-scheduler's). A pod one of
// them rejected is retried only for those events, and only if the hint says
// Queue; a rejecting plugin that does not implement it is asked nothing and
// retries the pod on every event.
type EnqueueExtensions interface {
	Plugin
	EventsToRegister() []ClusterEventWithHint
}

// As casts a hint's old and new objects to T, either of which may be nil
// (but not both).
func As[T any](oldObj, newObj any) (oldT, newT T, err error) {
	if newObj != nil {
		t, ok := newObj.(T)
		if !ok {
			return oldT, newT, fmt.Errorf("expected %T, got %T", newT, newObj)
		}
		newT = t
	}
	if oldObj != nil {
		t, ok := oldObj.(T)
		if !ok {
			return oldT, newT, fmt.Errorf("expected %T, got %T", oldT, oldObj)
		}
		oldT = t
	}
	return oldT, newT, nil
}
