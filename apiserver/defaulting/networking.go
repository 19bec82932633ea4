package defaulting

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// defaultNetworkPolicy follows Kubernetes' SetDefaults_NetworkPolicy and
// SetDefaults_NetworkPolicyPort (pkg/apis/networking/v1/defaults.go): a
// policy naming no policyTypes is an Ingress policy, and an Egress one too
// when it has egress rules; a port without a protocol is TCP.
func defaultNetworkPolicy(np *networkingv1.NetworkPolicy) {
	s := &np.Spec
	if len(s.PolicyTypes) == 0 {
		s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		if len(s.Egress) != 0 {
			s.PolicyTypes = append(s.PolicyTypes, networkingv1.PolicyTypeEgress)
		}
	}
	for i := range s.Ingress {
		defaultNetworkPolicyPorts(s.Ingress[i].Ports)
	}
	for i := range s.Egress {
		defaultNetworkPolicyPorts(s.Egress[i].Ports)
	}
}

func defaultNetworkPolicyPorts(ports []networkingv1.NetworkPolicyPort) {
	for i := range ports {
		if ports[i].Protocol == nil {
			ports[i].Protocol = ptrTo(corev1.ProtocolTCP)
		}
	}
}

// defaultIngressClass follows SetDefaults_IngressClass: parameters without
// a scope are cluster-scoped.
func defaultIngressClass(ic *networkingv1.IngressClass) {
	if p := ic.Spec.Parameters; p != nil && p.Scope == nil {
		p.Scope = ptrTo(networkingv1.IngressClassParametersReferenceScopeCluster)
	}
}
