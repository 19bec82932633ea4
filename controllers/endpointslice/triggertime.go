package endpointslice

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// triggerTimes computes the endpoints.kubernetes.io/last-change-trigger-time of a Service's slices as
// Kubernetes' TriggerTimeTracker does. It remembers, per Service, the trigger times its last sync saw:
// the Service's creation and each pod's Ready condition lastTransitionTime. A sync's trigger time is
// the Service's creation the first time the Service is synced, afterwards the earliest of the trigger
// times that moved forward since the last sync, or none (the zero time). Like Kubernetes', it can be
// wrong when one object changes several times between two syncs. Calls for one Service must not
// overlap (the queue sees to that).
type triggerTimes struct {
	mu       sync.Mutex
	services map[string]triggerState
}

type triggerState struct {
	service time.Time
	pods    map[string]time.Time
}

func newTriggerTimes() *triggerTimes {
	return &triggerTimes{services: map[string]triggerState{}}
}

func (t *triggerTimes) compute(key string, svc *corev1.Service, pods []*corev1.Pod) time.Time {
	t.mu.Lock()
	last, known := t.services[key]
	t.mu.Unlock()

	var earliest time.Time
	moved := func(tt time.Time) {
		if earliest.IsZero() || tt.Before(earliest) {
			earliest = tt
		}
	}
	next := triggerState{service: svc.CreationTimestamp.Time, pods: map[string]time.Time{}}
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

// forget drops a deleted Service.
func (t *triggerTimes) forget(key string) {
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

// setTriggerTime records the trigger time on a slice about to be written, or removes an older one
// when this sync has none.
func setTriggerTime(s *discoveryv1.EndpointSlice, at time.Time) {
	if at.IsZero() {
		delete(s.Annotations, corev1.EndpointsLastChangeTriggerTime)
		return
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[corev1.EndpointsLastChangeTriggerTime] = at.UTC().Format(time.RFC3339Nano)
}
