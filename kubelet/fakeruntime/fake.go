// Package fakeruntime is the hollow-node runtime (as Kubernetes' kubemark):
// it runs no containers but reports every pod's containers as started and
// ready, and stops them when asked, so one machine can simulate hundreds of
// nodes for scheduler and controller scale tests. Everything above it — node
// registration, leases, pod status — is the real agent code. App containers
// scripted to exit are restarted as restartPolicy says, with the kubelet's
// CrashLoopBackOff (kubelet/crashloop), as podruntime restarts them.
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
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/kubelet/agent"
)

// Runtime is a hollow runtime. The zero value is not usable; call New.
type Runtime struct {
	// stopDelay is how long a container takes to exit after SIGTERM, capped
	// by the pod's grace period (so deletion honours the grace period).
	stopDelay time.Duration
	// rec receives the Events the runtime itself causes (a container
	// killed because its image changed); nil records none.
	rec record.EventRecorder
	// now is the clock (time.Now; tests replace it).
	now func() time.Time

	mu   sync.Mutex
	pods map[types.UID]*hollowPod
}

// New returns a hollow runtime whose containers take stopDelay to stop and
// which records its Events with rec (nil: none).
func New(stopDelay time.Duration, rec record.EventRecorder) *Runtime {
	return &Runtime{stopDelay: stopDelay, rec: rec, now: time.Now, pods: map[types.UID]*hollowPod{}}
}

var (
	_ agent.Runtime              = (*Runtime)(nil)
	_ agent.RuntimeHandlerLister = (*Runtime)(nil)
)

func (r *Runtime) Name() string                            { return "fake" }
func (r *Runtime) Version(context.Context) (string, error) { return "1.0.0", nil }

// RuntimeHandlers claims one handler, the default, with recursive
// read-only mounts, as a real node whose runc (1.1+) and kernel (5.12+)
// have them, which every machine skiff's real agent runs on here has: a
// pod asking for `recursiveReadOnly: Enabled` runs on a hollow node as on
// a real one and reports the mount Enabled, rather than hollow nodes
// failing pods real nodes run. A hollow node mounts nothing, so it keeps
// that claim trivially. No user namespaces, as the real agent, so hollow
// nodes refuse pods asking for one (hostUsers: false) as real ones do.
func (r *Runtime) RuntimeHandlers() []corev1.NodeRuntimeHandler {
	return agent.DefaultRuntimeHandlers(true)
}

// Annotations that script a hollow pod's app containers, so controllers that
// wait for pods to finish (Job, CronJob) can be exercised on hollow nodes.
// Without ExitAfterAnnotation containers run until the pod is deleted.
const (
	// ExitAfterAnnotation is a Go duration ("2s"): the app containers exit
	// that long after the pod started, and every later attempt that long
	// after it started (under restartPolicy Always, or OnFailure with a
	// non-zero code, a container that exited is restarted after its
	// CrashLoopBackOff).
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

// ResyncAfter tells the agent when a scripted pod's app containers next
// change on their own — one exits, or one's back-off ends and it starts
// again — so it looks again then; 0 when none will (pods that run until
// deleted, containers that exited for good).
func (r *Runtime) ResyncAfter(pod *corev1.Pod) time.Duration {
	if _, _, ok := script(pod); !ok {
		return 0
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	hp, seen := r.pods[pod.UID]
	if !seen {
		return 0
	}
	var soonest time.Duration
	for _, c := range pod.Spec.Containers {
		a, ok := hp.containers[c.Name]
		if !ok {
			continue
		}
		at, ok := a.nextChange(pod, now)
		if !ok {
			continue
		}
		// Due already (it came while the agent synced): look at once.
		left := max(at.Sub(now), time.Millisecond)
		if soonest == 0 || left < soonest {
			soonest = left
		}
	}
	return soonest
}

// SyncPod reports init containers completed and app containers running and
// ready since the pod was first seen (or exited, when scripted so, and
// backing off or restarted as restartPolicy says), their images already
// present. A running app container or sidecar whose image a pod update
// changed is restarted from the new image, as the kubelet restarts a
// container whose spec hash changed; one backing off starts from it at
// once.
func (r *Runtime) SyncPod(_ context.Context, pod *corev1.Pod, _ string) (agent.PodState, error) {
	st, killed, stopped := r.observe(pod, false)
	for _, c := range killed {
		r.recordKilling(pod, c)
	}
	for _, c := range stopped {
		r.event(pod, c, "Killing", fmt.Sprintf("Stopping container %s", c.Name))
	}
	// Every image is "present": the kubelet's Pulled Event for IfNotPresent.
	st.Pulled = make(map[string]string, len(st.InitContainers)+len(st.Containers))
	for _, list := range [][]corev1.ContainerStatus{st.InitContainers, st.Containers} {
		for _, s := range list {
			st.Pulled[s.Name] = fmt.Sprintf("Container image %q already present on machine", s.Image)
		}
	}
	return st, nil
}

// observe reports the pod's containers as they are now, first seeing the
// pod if it is new and playing the crash loops of its app containers up to
// now. Unless the pod is stopping, it then restarts the app containers and
// sidecars whose image changed and returns those it killed (were running),
// and returns the sidecars the pod's end stopped, once.
func (r *Runtime) observe(pod *corev1.Pod, stopping bool) (st agent.PodState, killed, stopped []*corev1.Container) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	hp, ok := r.pods[pod.UID]
	if !ok {
		at := now
		if pod.Status.StartTime != nil { // adopted after an agent restart
			at = pod.Status.StartTime.Time
		}
		hp = &hollowPod{started: at, containers: map[string]*attempt{}}
		r.pods[pod.UID] = hp
	}
	for i := range pod.Spec.Containers {
		hp.advance(pod, &pod.Spec.Containers[i], now)
	}
	if !stopping {
		killed = hp.restartChanged(pod, now)
		stopped = hp.stopSidecars(pod, now)
	}
	return hp.state(pod, now, stopping), killed, stopped
}

// recordKilling records the Killing Event of a container restarted because
// its image changed, in the kubelet's words.
func (r *Runtime) recordKilling(pod *corev1.Pod, c *corev1.Container) {
	message := fmt.Sprintf("Container %s definition changed, will be restarted", c.Name)
	if isSidecar(c) {
		message = fmt.Sprintf("Init container %s definition changed", c.Name) // the kubelet's words for a sidecar
	}
	r.event(pod, c, "Killing", message)
}

// event records a Normal Event about container c of the pod (none without
// a recorder).
func (r *Runtime) event(pod *corev1.Pod, c *corev1.Container, reason, message string) {
	if r.rec != nil {
		r.rec.Event(agent.ContainerRef(pod, c.Name), corev1.EventTypeNormal, reason, message)
	}
}

// StopPod stops the containers as KillPod does and reports how they ended: a
// scripted exit that came first as scripted (a container backing off by
// the exit of its latest attempt), every other container as a process
// without a SIGTERM handler ends (143), or, when its stop takes longer than
// the grace period, as one killed (137). A pod this runtime never started
// reports nothing.
func (r *Runtime) StopPod(ctx context.Context, pod *corev1.Pod, grace time.Duration) (agent.PodState, error) {
	r.mu.Lock()
	_, seen := r.pods[pod.UID]
	r.mu.Unlock()
	var st agent.PodState
	if seen {
		// As they are: a pod being stopped has no container restarted
		// for a new image, and one backing off ends as it exited.
		st, _, _ = r.observe(pod, true)
	}
	if err := r.KillPod(ctx, pod, grace); err != nil {
		return agent.PodState{}, err
	}
	now := metav1.NewTime(r.now())
	// One slower to stop than the grace period allows is killed when it
	// ends, as a runtime kills a process that outlives its SIGTERM.
	exit := int32(143)
	if r.stopDelay > grace {
		exit = 137
	}
	for _, list := range [][]corev1.ContainerStatus{st.InitContainers, st.Containers} {
		for i := range list {
			c := &list[i]
			if run := c.State.Running; run != nil {
				c.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: "Error",
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
	delete(r.pods, pod.UID)
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
