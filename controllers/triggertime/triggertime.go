// Package triggertime computes endpoints.kubernetes.io/last-change-trigger-time, the annotation the
// Endpoints and EndpointSlice controllers put on the objects they write, as Kubernetes'
// TriggerTimeTracker does: when the change that the write publishes happened, for latency SLIs.
// Each controller keeps its own Tracker, as in Kubernetes.
package triggertime

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Tracker remembers, per Service key, the trigger times its last sync saw: the Service's creation
// and each pod's Ready condition lastTransitionTime. A sync's trigger time is the Service's creation
// the first time the Service is synced, afterwards the earliest of the trigger times that moved
// forward since the last sync, or none (the zero time). Like Kubernetes', it can be wrong when one
// object changes several times between two syncs. Calls for one Service must not overlap (the
// queue sees to that).
type Tracker struct {
	mu       sync.Mutex
	services map[string]state
}

type state struct {
	service time.Time
	pods    map[string]time.Time
}

// New returns an empty Tracker.
func New() *Tracker {
	return &Tracker{services: map[string]state{}}
}

// Compute returns the trigger time of a sync of the Service key selecting pods and remembers what it
// saw. Call it on every sync, even one that writes nothing, so that what it remembers stays current.
func (t *Tracker) Compute(key string, svc *corev1.Service, pods []*corev1.Pod) time.Time {
	t.mu.Lock()
	last, known := t.services[key]
	t.mu.Unlock()

	var earliest time.Time
	moved := func(tt time.Time) {
		if earliest.IsZero() || tt.Before(earliest) {
			earliest = tt
		}
	}
	next := state{service: svc.CreationTimestamp.Time, pods: map[string]time.Time{}}
	for _, pod := range pods {
		pt := podTriggerTime(pod)
		if pt.IsZero() {
			continue
		}
		next.pods[pod.Name] = pt
		if pt.After(last.pods[pod.Name]) {
			moved(pt)
		}
	}
	if next.service.After(last.service) {
		moved(next.service)
	}

	t.mu.Lock()
	t.services[key] = next
	t.mu.Unlock()
	if !known {
		return svc.CreationTimestamp.Time
	}
	return earliest
}

// Forget drops a deleted Service.
func (t *Tracker) Forget(key string) {
	t.mu.Lock()
	delete(t.services, key)
	t.mu.Unlock()
}

func podTriggerTime(pod *corev1.Pod) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// Annotate records at in annotations (allocated if nil, and returned), or removes an older trigger
// time when at is zero: an object written without a trigger of its own must not keep an old one.
func Annotate(annotations map[string]string, at time.Time) map[string]string {
	if at.IsZero() {
		delete(annotations, corev1.EndpointsLastChangeTriggerTime)
		return annotations
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[corev1.EndpointsLastChangeTriggerTime] = at.UTC().Format(time.RFC3339Nano)
	return annotations
}
