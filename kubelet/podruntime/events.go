package podruntime

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/kubelet/agent"
	"github.com/skiffkube/skiff/kubelet/prober"
)

// event records an Event about container c of pod, as the kubelet does:
// the involved object is the pod with the container's field path
// (spec.containers{name}), so `kubectl describe pod` lists it and tools can
// tell which container it concerns. Without a Recorder it does nothing.
func (r *Runtime) event(pod *corev1.Pod, c *corev1.Container, eventType, reason, format string, args ...any) {
	if r.rec == nil {
		return
	}
	r.rec.Eventf(agent.ContainerRef(pod, c.Name), eventType, reason, format, args...)
}

// probeName is the probe kind as the kubelet's messages spell it
// ("Liveness probe failed: ...").
func probeName(k prober.Kind) string {
	s := string(k)
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
