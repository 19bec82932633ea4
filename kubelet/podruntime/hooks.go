package podruntime

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/kubelet/prober"
	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// runHook runs a postStart or preStop handler against the container within
// ctx: exec in the container, an HTTP GET to the pod, or a sleep.
func (r *Runtime) runHook(ctx context.Context, h *corev1.LifecycleHandler, c *corev1.Container, id, podIP string) error {
	if h.Sleep != nil {
		select {
		case <-time.After(time.Duration(h.Sleep.Seconds) * time.Second):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// A hook is a probe run once without its own timeout: it gets what is
	// left of ctx.
	timeout := int32(1 << 20)
	if dl, ok := ctx.Deadline(); ok {
		timeout = int32(time.Until(dl)/time.Second) + 1
	}
	p := &corev1.Probe{TimeoutSeconds: timeout, ProbeHandler: corev1.ProbeHandler{Exec: h.Exec, HTTPGet: h.HTTPGet, TCPSocket: h.TCPSocket}}
	res, reason := prober.Once(ctx, p, prober.Target{PodIP: podIP, Container: c, Exec: r.execFunc(id)})
	if res != prober.Success {
		return fmt.Errorf("%s", reason)
	}
	return nil
}

// preStop runs the container's preStop hook, if any, within grace and
// returns how much of the grace period is left for SIGTERM.
func (r *Runtime) preStop(ctx context.Context, pod *corev1.Pod, s krt.ContainerStatus, grace time.Duration) time.Duration {
	c := findContainer(pod, s.Name)
	if c == nil || c.Lifecycle == nil || c.Lifecycle.PreStop == nil || grace <= 0 {
		return grace
	}
	start := time.Now()
	hctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	if err := r.runHook(hctx, c.Lifecycle.PreStop, c, s.ID, pod.Status.PodIP); err != nil {
		r.log.Warn("preStop hook failed", "pod", pod.Namespace+"/"+pod.Name, "container", s.Name, "err", err)
		// As the kubelet: the event says no more, so that what the hook ran
		// or printed (maybe a secret) stays on the node, unlike postStart's.
		r.event(pod, c, corev1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed")
	}
	left := grace - time.Since(start)
	if left < minGrace {
		// As the kubelet: a short minimum so SIGTERM still gets a chance.
		left = minGrace
	}
	return left
}

// hookFailure is the kubelet's message for a failed postStart hook.
func hookFailure(pod *corev1.Pod, c *corev1.Container, h *corev1.LifecycleHandler, err error) string {
	podName := fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
	switch {
	case h.Exec != nil:
		return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v", h.Exec.Command, c.Name, podName, err)
	case h.HTTPGet != nil:
		return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, c.Name, podName, err)
	}
	return fmt.Sprintf("Lifecycle hook for Container %q in Pod %q failed - error: %v", c.Name, podName, err)
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}
