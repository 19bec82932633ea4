package warnings

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An Ingress naming its class only in the deprecated annotation is warned
// on create; NetworkPolicy ipBlock values in forms v1.33 still accepts are
// pointed out on create and when the spec changes.
func TestNetworking(t *testing.T) {
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"kubernetes.io/ingress.class": "nginx"}}}
	check(t, "class annotation", OnCreate(ing), `annotation "kubernetes.io/ingress.class" is deprecated, please use 'spec.ingressClassName' instead`)
	check(t, "class annotation on update", OnUpdate(ing, ing))
	ing.Spec.IngressClassName = ptr("nginx")
	check(t, "annotation and ingressClassName", OnCreate(ing))

	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: networkingv1.NetworkPolicySpec{
		Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{}, {IPBlock: &networkingv1.IPBlock{
			CIDR: "10.0.0.0/8", Except: []string{"10.1.0.1/16", "010.2.0.0/16"}}}}}},
		Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "2001:DB8::/32"}}}}},
	}}
	want := []string{
		`spec.ingress[0].from[1].ipBlock.except[0]: CIDR value "10.1.0.1/16" is ambiguous in this context (should be "10.1.0.0/16" or "10.1.0.1/32"?)`,
		`spec.ingress[0].from[1].ipBlock.except[1]: non-standard CIDR value "010.2.0.0/16" will be considered invalid in a future Kubernetes release: use "10.2.0.0/16"`,
		`spec.egress[0].to[0].ipBlock.cidr: IPv6 CIDR value "2001:DB8::/32" should be in RFC 5952 canonical format ("2001:db8::/32")`,
	}
	check(t, "network policy create", OnCreate(np), want...)
	old := np.DeepCopy()
	check(t, "network policy update, spec unchanged", OnUpdate(np, old))
	old.Generation = 1
	check(t, "network policy update, spec changed", OnUpdate(np, old), want...)
}
