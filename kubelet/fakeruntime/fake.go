// Package fakeruntime is the hollow-node runtime (as Kubernetes' kubemark):
// it runs no containers but reports every pod's containers as started and
// ready, and stops them when asked, so one machine can simulate hundreds of
// nodes for scheduler and controller scale tests. Everything above it — node
// registration, leases, pod status — is the real agent code.
package fakeruntime

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffkube/skiff/kubelet/agent"
)

// Runtime is a hollow runtime. The zero value is not usable; call New.
type Runtime struct {
	// stopDelay is how long a container takes to exit after SIGTERM, capped
	// by the pod's grace period (so deletion honours the grace period).
	stopDelay time.Duration

	mu      sync.Mutex
	started map[types.UID]time.Time
}

// New returns a hollow runtime whose containers take stopDelay to stop.
func New(stopDelay time.Duration) *Runtime {
	return &Runtime{stopDelay: stopDelay, started: map[types.UID]time.Time{}}
}

var _ agent.Runtime = (*Runtime)(nil)

func (r *Runtime) Name() string                            { return "fake" }
func (r *Runtime) Version(context.Context) (string, error) { return "1.0.0", nil }

// Annotations that script a hollow pod's app containers, so controllers that
// wait for pods to finish (Job, CronJob) can be exercised on hollow nodes.
// Without ExitAfterAnnotation containers run until the pod is deleted.
const (
	// ExitAfterAnnotation is a Go duration ("2s"): the app containers exit
	// that long after the pod started.
	ExitAfterAnnotation = "hollow.skiff.dev/exit-after"
	// ExitCodeAnnotation is their exit code (default 0).
	ExitCodeAnnotation = "hollow.skiff.dev/exit-code"
)

// script reads a pod's scripted exit; ok is false when it has none or it
// does not parse.
func script(pod *corev1.Pod) (after time.Duration, code int32, ok bool) {
	s, found := pod.Annotations[ExitAfterAnnotation]
	if !found {
		return 0, 0, false
	}
	after, err := time.ParseDuration(s)
	if err != nil || after < 0 {
		return 0, 0, false
	}
	if c, found := pod.Annotations[ExitCodeAnnotation]; found {
		n, err := strconv.ParseInt(c, 10, 32)
		if err != nil {
			return 0, 0, false
		}
		code = int32(n)
	}
	return after, code, true
}

// ResyncAfter tells the agent when a scripted pod's containers will exit, so
// it looks again then; 0 for pods that run until deleted.
func (r *Runtime) ResyncAfter(pod *corev1.Pod) time.Duration {
	after, _, ok := script(pod)
	if !ok {
		return 0
	}
	r.mu.Lock()
	at, seen := r.started[pod.UID]
	r.mu.Unlock()
	if !seen {
		return 0
	}
	if left := time.Until(at.Add(after)); left > 0 {
		return left
	}
	return 0
}

// SyncPod reports init containers completed and app containers running and
// ready since the pod was first seen (or exited, when scripted so), their
// images already present.
func (r *Runtime) SyncPod(_ context.Context, pod *corev1.Pod, _ string) (agent.PodState, error) {
	r.mu.Lock()
	at, ok := r.started[pod.UID]
	if !ok {
		at = time.Now()
		if pod.Status.StartTime != nil { // adopted after an agent restart
			at = pod.Status.StartTime.Time
		}
		r.started[pod.UID] = at
	}
	r.mu.Unlock()
	started := metav1.NewTime(at)
	// Every image is "present": the kubelet's Pulled Event for IfNotPresent.
	st := agent.PodState{Pulled: make(map[string]string, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			st.Pulled[c.Name] = fmt.Sprintf("Container image %q already present on machine", c.Image)
		}
	}
	after, code, scripted := script(pod)
	exited := scripted && !time.Now().Before(at.Add(after))
	// Once the app containers have exited for good (they are not restarted
	// under Never, nor under OnFailure with 0), the kubelet stops the
	// sidecars: they end as processes without a SIGTERM handler do.
	finished := exited && (pod.Spec.RestartPolicy == corev1.RestartPolicyNever ||
		pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure && code == 0)
	for _, c := range pod.Spec.InitContainers {
		s := status(pod, c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			if finished {
				s.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 143, Reason: "Error", StartedAt: started,
					FinishedAt: metav1.NewTime(at.Add(after)), ContainerID: s.ContainerID}
			} else {
				s.State.Running = &corev1.ContainerStateRunning{StartedAt: started}
				s.Ready, s.Started = true, ptrTrue()
			}
		} else {
			s.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: started, FinishedAt: started, ContainerID: s.ContainerID}
		}
		st.InitContainers = append(st.InitContainers, s)
	}
	for _, c := range pod.Spec.Containers {
		s := status(pod, c)
		if exited {
			reason := "Completed"
			if code != 0 {
				reason = "Error"
			}
			s.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: started,
				FinishedAt: metav1.NewTime(at.Add(after)), ContainerID: s.ContainerID}
		} else {
			s.State.Running = &corev1.ContainerStateRunning{StartedAt: started}
			s.Ready, s.Started = true, ptrTrue()
		}
		st.Containers = append(st.Containers, s)
	}
	return st, nil
}

func status(pod *corev1.Pod, c corev1.Container) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name:        c.Name,
		Image:       c.Image,
		ImageID:     "fake://" + c.Image,
		ContainerID: fmt.Sprintf("fake://%s/%s", pod.UID, c.Name),
		Started:     new(bool),
	}
}

func ptrTrue() *bool { b := true; return &b }

// StopPod stops the containers as KillPod does and reports how they ended: a
// scripted exit that came first as scripted, every other container as a
// process without a SIGTERM handler ends (143). A pod this runtime never
// started reports nothing.
func (r *Runtime) StopPod(ctx context.Context, pod *corev1.Pod, grace time.Duration) (agent.PodState, error) {
	r.mu.Lock()
	_, seen := r.started[pod.UID]
	r.mu.Unlock()
	var st agent.PodState
	if seen {
		st, _ = r.SyncPod(ctx, pod, "")
		st.Pulled = nil
	}
	if err := r.KillPod(ctx, pod, grace); err != nil {
		return agent.PodState{}, err
	}
	now := metav1.Now()
	for _, list := range [][]corev1.ContainerStatus{st.InitContainers, st.Containers} {
		for i := range list {
			c := &list[i]
			if run := c.State.Running; run != nil {
				c.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 143, Reason: "Error",
					StartedAt: run.StartedAt, FinishedAt: now, ContainerID: c.ContainerID}}
				c.Ready, c.Started = false, new(bool)
			}
		}
	}
	return st, nil
}

var _ agent.PodStopper = (*Runtime)(nil)

// StopSandbox releases what a finished pod holds besides its containers: a
// hollow pod holds nothing, so the agent may give its IP to later pods.
func (r *Runtime) StopSandbox(context.Context, *corev1.Pod) error { return nil }

var _ agent.SandboxStopper = (*Runtime)(nil)

// KillPod waits for the containers to "exit": stopDelay, capped by grace.
func (r *Runtime) KillPod(ctx context.Context, pod *corev1.Pod, grace time.Duration) error {
	r.mu.Lock()
	delete(r.started, pod.UID)
	r.mu.Unlock()
	if d := min(r.stopDelay, grace); d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
