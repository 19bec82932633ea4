package agent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubelet's words for a pod that outlived its spec.activeDeadlineSeconds
// (its active deadline handler): the status reason and message, and the
// Normal Event's.
const (
	reasonDeadlineExceeded  = "DeadlineExceeded"
	messageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// activeDeadline says when the pod's spec.activeDeadlineSeconds runs out,
// counted from its start time (start); ok is false when it has no
// deadline or has not started.
func activeDeadline(pod *corev1.Pod, start *metav1.Time) (time.Time, bool) {
	if pod.Spec.ActiveDeadlineSeconds == nil || start == nil || start.IsZero() {
		return time.Time{}, false
	}
	return start.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second), true
}

// pastActiveDeadline says whether the pod, started at start, has been
// active for as long as its spec.activeDeadlineSeconds allows, as the
// kubelet judges it.
func pastActiveDeadline(pod *corev1.Pod, start *metav1.Time, now time.Time) bool {
	deadline, ok := activeDeadline(pod, start)
	return ok && !now.Before(deadline)
}

// startTime is the pod's start time as the agent knows it: the one it
// gave the pod (keepStart), which the cached pod lacks until the agent's
// status write reaches the cache, else the cached pod's (a pod adopted
// after an agent restart), as the kubelet reads its status manager's
// before the pod's own.
func (a *Agent) startTime(pod *corev1.Pod) *metav1.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	if start := a.started[pod.UID]; start != nil {
		return start
	}
	return pod.Status.StartTime
}

// keepStart returns the start time the agent gave the pod, giving it start
// if it has none yet, so that the start time written and the active
// deadline counted from it stay the same while the cache lags: the
// deadline is judged when it runs out, not once the cache shows the start
// time (nor from a later one written meanwhile).
func (a *Agent) keepStart(pod *corev1.Pod, start *metav1.Time) *metav1.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	if kept := a.started[pod.UID]; kept != nil {
		return kept
	}
	if start != nil {
		a.started[pod.UID] = start
	}
	return start
}

// terminationGrace is the grace period the pod's containers are stopped
// with: its deletion's, else its spec's, else Kubernetes' default.
func terminationGrace(pod *corev1.Pod) time.Duration {
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if pod.DeletionGracePeriodSeconds != nil {
		grace = *pod.DeletionGracePeriodSeconds
	}
	return time.Duration(grace) * time.Second
}

// failPastDeadline stops a pod past its active deadline and fails it, as
// the kubelet does: a Normal DeadlineExceeded Event, its running containers
// stopped with the pod's grace period (each with its Killing Event), then
// phase Failed with reason DeadlineExceeded, the containers as they ended,
// and the conditions of a pod stopped for good. Its sandbox is stopped and
// its address given back, as for a pod that finished; the pod stays, its
// containers stopped, until it is deleted.
func (a *Agent) failPastDeadline(ctx context.Context, key string, pod *corev1.Pod) error {
	a.mu.Lock()
	noticed := a.overdue[pod.UID]
	a.overdue[pod.UID] = true
	a.mu.Unlock()
	// The Events once per pod, not again at each retry of a failed stop.
	if a.cfg.Recorder != nil && !noticed {
		a.cfg.Recorder.Event(pod, corev1.EventTypeNormal, reasonDeadlineExceeded, messageDeadlineExceeded)
		recordKilling(a.cfg.Recorder, pod)
	}
	status := pod.Status.DeepCopy()
	status.StartTime = a.startTime(pod)
	grace := terminationGrace(pod)
	if s, ok := a.runtime.(PodStopper); ok {
		final, err := s.StopPod(ctx, pod, grace)
		if err != nil {
			return fmt.Errorf("stopping containers of %s past its deadline: %w", key, err)
		}
		if len(final.InitContainers)+len(final.Containers) > 0 {
			fillFromSpec(&pod.Spec, &pod.Status, final, a.recursiveReadOnly())
			status.InitContainerStatuses, status.ContainerStatuses = final.InitContainers, final.Containers
		}
	} else if err := a.runtime.KillPod(ctx, pod, grace); err != nil {
		return fmt.Errorf("stopping containers of %s past its deadline: %w", key, err)
	}
	now := metav1.Now()
	endContainers(&pod.Spec, status, now)
	status.Phase, status.Reason, status.Message = corev1.PodFailed, reasonDeadlineExceeded, messageDeadlineExceeded
	stoppedConditions(status, now)
	if s, open := a.sandboxStopper(); s != nil {
		if err := s.StopSandbox(ctx, pod); err != nil {
			return fmt.Errorf("stopping the sandbox of %s past its deadline: %w", key, err)
		}
	} else if open {
		// A runtime that cannot stop only the sandbox releases all.
		if err := a.runtime.KillPod(ctx, pod, 0); err != nil {
			return fmt.Errorf("stopping containers of %s past its deadline: %w", key, err)
		}
	}
	// From here on only this status is written, until the pod goes.
	a.sandboxStopped(pod, status)
	return a.writeStatus(ctx, key, pod, status)
}
