package podstate

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// IsTerminal reports whether the pod has finished (Succeeded or Failed) and will never run again.
func IsTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// IsActive reports whether the pod counts towards a controller's replicas: not finished and not being
// deleted.
func IsActive(p *corev1.Pod) bool {
	return !IsTerminal(p) && p.DeletionTimestamp == nil
}

// ReadyCondition returns the pod's Ready condition, or nil.
func ReadyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// IsReady reports whether the pod's Ready condition is True.
func IsReady(p *corev1.Pod) bool {
	c := ReadyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsAvailable reports whether the pod has been ready for at least minReadySeconds at now.
func IsAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := ReadyCondition(p)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	if minReadySeconds <= 0 {
		return true
	}
	if c.LastTransitionTime.IsZero() {
		return false
	}
	return !c.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second).After(now)
}

// ResolvePort returns the pod port a Service targetPort names: a number as is, a name looked up among
// the ports with the same protocol of the pod's containers and then of its sidecars (init containers
// with restartPolicy Always), as Kubernetes' FindPort does. ok is false when the pod has no such named
// port.
func ResolvePort(pod *corev1.Pod, sp corev1.ServicePort) (int32, bool) {
	tp := sp.TargetPort
	proto := sp.Protocol
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	switch {
	case tp.Type == intstr.String && tp.StrVal != "":
		if n, ok := namedPort(pod.Spec.Containers, tp.StrVal, proto, false); ok {
			return n, true
		}
		return namedPort(pod.Spec.InitContainers, tp.StrVal, proto, true)
	case tp.Type == intstr.Int && tp.IntVal != 0:
		return tp.IntVal, true
	default:
		// Unset targetPort defaults to the service port (the apiserver normally fills it in).
		return sp.Port, true
	}
}

// namedPort looks name up among the ports of ctrs with protocol proto; with sidecarsOnly, among those of
// containers whose restartPolicy is Always only (an init container that keeps running beside the others).
func namedPort(ctrs []corev1.Container, name string, proto corev1.Protocol, sidecarsOnly bool) (int32, bool) {
	for _, ctr := range ctrs {
		if sidecarsOnly && (ctr.RestartPolicy == nil || *ctr.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
			continue
		}
		for _, p := range ctr.Ports {
			pp := p.Protocol
			if pp == "" {
				pp = corev1.ProtocolTCP
			}
			if p.Name == name && pp == proto {
				return p.ContainerPort, true
			}
		}
	}
	return 0, false
}
