// Package fakeruntime is the hollow-node runtime (as Kubernetes' kubemark):
// it runs no containers but reports every pod's containers as started and
// ready, and stops them when asked, so one machine can simulate hundreds of
// nodes for scheduler and controller scale tests. Everything above it — node
// registration, leases, pod status — is the real agent code.
package fakeruntime

import (
	"context"
	"fmt"
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

// SyncPod reports init containers completed and app containers running and
// ready since the pod was first seen.
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
	var st agent.PodState
	for _, c := range pod.Spec.InitContainers {
		s := status(pod, c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			s.State.Running = &corev1.ContainerStateRunning{StartedAt: started}
			s.Ready, s.Started = true, ptrTrue()
		} else {
			s.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: started, FinishedAt: started, ContainerID: s.ContainerID}
		}
		st.InitContainers = append(st.InitContainers, s)
	}
	for _, c := range pod.Spec.Containers {
		s := status(pod, c)
		s.State.Running = &corev1.ContainerStateRunning{StartedAt: started}
		s.Ready, s.Started = true, ptrTrue()
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
