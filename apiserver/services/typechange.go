package services

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// dropTypeDependentFields clears, on an update that changes a Service's
// type, the fields the new type has no use for, as Kubernetes' Service
// registry does: `kubectl patch svc x -p '{"spec":{"type":"ClusterIP"}}'`
// sends back the node ports and externalTrafficPolicy the server filled in,
// which validation would refuse for a ClusterIP Service. A field is dropped
// only when the client left it as it was stored; one it changed in the same
// request is its own, and validation judges it. Allocated values dropped
// here are released once the update is stored (BeforeUpdate's Commit).
func dropTypeDependentFields(svc, old *corev1.Service) {
	n, o := &svc.Spec, &old.Spec
	if o.Type != corev1.ServiceTypeExternalName && n.Type == corev1.ServiceTypeExternalName {
		if n.ClusterIP == o.ClusterIP && slices.Equal(n.ClusterIPs, o.ClusterIPs) {
			n.ClusterIP, n.ClusterIPs = "", nil
		}
		if slices.Equal(n.IPFamilies, o.IPFamilies) {
			n.IPFamilies = nil
		}
		if sameString(n.IPFamilyPolicy, o.IPFamilyPolicy) {
			n.IPFamilyPolicy = nil
		}
	}
	if needsNodePorts(old) && !needsNodePorts(svc) && noNewNodePorts(svc, old) {
		for i := range n.Ports {
			n.Ports[i].NodePort = 0
		}
	}
	if needsHealthCheckNodePort(old) && !needsHealthCheckNodePort(svc) && n.HealthCheckNodePort == o.HealthCheckNodePort {
		n.HealthCheckNodePort = 0
	}
	if o.Type == corev1.ServiceTypeLoadBalancer && n.Type != corev1.ServiceTypeLoadBalancer {
		if n.AllocateLoadBalancerNodePorts != nil && o.AllocateLoadBalancerNodePorts != nil &&
			*n.AllocateLoadBalancerNodePorts == *o.AllocateLoadBalancerNodePorts {
			n.AllocateLoadBalancerNodePorts = nil
		}
		if sameString(n.LoadBalancerClass, o.LoadBalancerClass) {
			n.LoadBalancerClass = nil
		}
	}
	if needsNodePorts(old) && !needsNodePorts(svc) && n.ExternalTrafficPolicy == o.ExternalTrafficPolicy {
		n.ExternalTrafficPolicy = ""
	}
	// A Service that is no longer a LoadBalancer has no load balancer to
	// report; status is the old one here, so this is what gets stored.
	if n.Type != corev1.ServiceTypeLoadBalancer {
		svc.Status.LoadBalancer = corev1.LoadBalancerStatus{}
	}
}

// noNewNodePorts: the update adds no node port the Service did not hold, so
// its node ports are the server's (or were the client's before) to drop.
func noNewNodePorts(svc, old *corev1.Service) bool {
	held := map[int32]bool{}
	for _, p := range old.Spec.Ports {
		held[p.NodePort] = true
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 && !held[p.NodePort] {
			return false
		}
	}
	return true
}

func sameString[T ~string](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
