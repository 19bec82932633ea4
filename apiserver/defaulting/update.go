package defaulting

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DefaultUpdate prepares the new version of an object in an update: it first
// carries over the values the server assigned on create that a full replace
// (kubectl replace, PUT of a hand-written manifest) leaves out, then applies
// Default. Without the carry-over such an update would look like an attempt
// to change an immutable field. Kubernetes' service registry does the same
// for a Service's cluster IPs, IP families and node ports.
//
// Types with nothing to carry over are simply defaulted.
func DefaultUpdate(newObj, oldObj runtime.Object) {
	if n, ok := newObj.(*corev1.Service); ok {
		if o, ok := oldObj.(*corev1.Service); ok {
			carryOverServiceAllocations(n, o)
		}
	}
	Default(newObj)
}

func carryOverServiceAllocations(n, o *corev1.Service) {
	ns, os := &n.Spec, &o.Spec
	if ns.Type == corev1.ServiceTypeExternalName || os.Type == corev1.ServiceTypeExternalName {
		return
	}
	if ns.ClusterIP == "" && len(ns.ClusterIPs) == 0 {
		ns.ClusterIP = os.ClusterIP
		ns.ClusterIPs = append([]string(nil), os.ClusterIPs...)
	}
	if len(ns.IPFamilies) == 0 {
		ns.IPFamilies = append([]corev1.IPFamily(nil), os.IPFamilies...)
	}
	if ns.IPFamilyPolicy == nil && os.IPFamilyPolicy != nil {
		p := *os.IPFamilyPolicy
		ns.IPFamilyPolicy = &p
	}
	if hasNodePorts(n) && hasNodePorts(o) {
		// A port keeps its node port when it is matched by name and the
		// number is not already claimed by another port of the new spec.
		used := map[int32]bool{}
		for _, p := range ns.Ports {
			if p.NodePort != 0 {
				used[p.NodePort] = true
			}
		}
		byName := map[string]int32{}
		for _, p := range os.Ports {
			byName[p.Name] = p.NodePort
		}
		for i := range ns.Ports {
			p := &ns.Ports[i]
			if old := byName[p.Name]; p.NodePort == 0 && old != 0 && !used[old] {
				p.NodePort = old
				used[old] = true
			}
		}
		if ns.HealthCheckNodePort == 0 && ns.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
			ns.HealthCheckNodePort = os.HealthCheckNodePort
		}
	}
}

func hasNodePorts(s *corev1.Service) bool {
	return s.Spec.Type == corev1.ServiceTypeNodePort || s.Spec.Type == corev1.ServiceTypeLoadBalancer
}
