package defaulting

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A NetworkPolicy without policyTypes is an Ingress policy, and an Egress
// one too when it has egress rules; ports without a protocol are TCP; an
// IngressClass's parameters without a scope are cluster-scoped (v1.33's
// networking/v1 defaults).
func TestNetworkingDefaults(t *testing.T) {
	port := intstr.FromInt32(53)
	udp := corev1.ProtocolUDP
	for _, tc := range []struct {
		name  string
		spec  networkingv1.NetworkPolicySpec
		types []networkingv1.PolicyType
	}{
		{"no rules", networkingv1.NetworkPolicySpec{}, []networkingv1.PolicyType{"Ingress"}},
		{"ingress rules only", networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{}}}, []networkingv1.PolicyType{"Ingress"}},
		{"egress rules", networkingv1.NetworkPolicySpec{Egress: []networkingv1.NetworkPolicyEgressRule{{}}}, []networkingv1.PolicyType{"Ingress", "Egress"}},
		{"given types kept", networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{"Egress"}}, []networkingv1.PolicyType{"Egress"}},
	} {
		np := &networkingv1.NetworkPolicy{Spec: tc.spec}
		Default(np)
		if !equality.Semantic.DeepEqual(np.Spec.PolicyTypes, tc.types) {
			t.Errorf("%s: policyTypes %v, want %v", tc.name, np.Spec.PolicyTypes, tc.types)
		}
	}

	np := &networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{
		Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: &port}}}},
		Egress:  []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: &port, Protocol: &udp}, {}}}},
	}}
	Default(np)
	got := []*corev1.Protocol{np.Spec.Ingress[0].Ports[0].Protocol, np.Spec.Egress[0].Ports[0].Protocol, np.Spec.Egress[0].Ports[1].Protocol}
	for i, want := range []corev1.Protocol{"TCP", "UDP", "TCP"} {
		if got[i] == nil || *got[i] != want {
			t.Errorf("port %d: protocol %v, want %s", i, got[i], want)
		}
	}

	ic := &networkingv1.IngressClass{Spec: networkingv1.IngressClassSpec{Parameters: &networkingv1.IngressClassParametersReference{Kind: "K", Name: "n"}}}
	Default(ic)
	if s := ic.Spec.Parameters.Scope; s == nil || *s != "Cluster" {
		t.Errorf("parameters.scope = %v, want Cluster", s)
	}
}
