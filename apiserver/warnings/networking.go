package warnings

import (
	"fmt"
	"net/netip"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// ingressClassAnnotation warns about the class annotation ingressClassName
// replaced, when the spec does not name a class (v1.33's ingress strategy,
// WarningsOnCreate; updates get none).
func ingressClassAnnotation(ing *networkingv1.Ingress) []string {
	const annotation = "kubernetes.io/ingress.class"
	if _, ok := ing.Annotations[annotation]; ok && ing.Spec.IngressClassName == nil {
		return []string{fmt.Sprintf("annotation %q is deprecated, please use 'spec.ingressClassName' instead", annotation)}
	}
	return nil
}

// networkPolicyCIDRs warns about each ipBlock cidr and except value in a
// form v1.33 accepts but points out (its networkPolicyWarnings).
func networkPolicyCIDRs(np *networkingv1.NetworkPolicy) []string {
	var w []string
	peers := func(p *field.Path, list []networkingv1.NetworkPolicyPeer) {
		for i, peer := range list {
			if b := peer.IPBlock; b != nil {
				bp := p.Index(i).Child("ipBlock")
				w = append(w, cidrWarnings(bp.Child("cidr"), b.CIDR)...)
				for j, x := range b.Except {
					w = append(w, cidrWarnings(bp.Child("except").Index(j), x)...)
				}
			}
		}
	}
	for i, r := range np.Spec.Ingress {
		peers(field.NewPath("spec", "ingress").Index(i).Child("from"), r.From)
	}
	for i, r := range np.Spec.Egress {
		peers(field.NewPath("spec", "egress").Index(i).Child("to"), r.To)
	}
	return w
}

// cidrWarnings warns about a CIDR value as v1.33's GetWarningsForCIDR does
// (NetworkPolicy ipBlocks, a Service's loadBalancerSourceRanges): bits set
// past the prefix length (is it the subnet or the one address?), a form
// v1.33 announces it will refuse (leading zeros, IPv4-mapped IPv6), else
// IPv6 not in its canonical form. The texts are v1.33's; the apimachinery
// skiff builds with words the second differently since.
func cidrWarnings(path *field.Path, value string) []string {
	ip, ipnet, err := netutils.ParseCIDRSloppy(value)
	if err != nil {
		return nil // validation refuses it
	}
	var w []string
	if !ip.Equal(ipnet.IP) {
		_, bits := ipnet.Mask.Size()
		w = append(w, fmt.Sprintf("%s: CIDR value %q is ambiguous in this context (should be %q or %q?)", path, value, ipnet.String(), fmt.Sprintf("%s/%d", ip, bits)))
	}
	prefix, err := netip.ParsePrefix(value)
	if err != nil || prefix.Addr().Is4In6() {
		w = append(w, fmt.Sprintf("%s: non-standard CIDR value %q will be considered invalid in a future Kubernetes release: use %q", path, value, ipnet.String()))
	}
	if len(w) == 0 && prefix.Addr().Is6() && prefix.String() != value {
		w = append(w, fmt.Sprintf("%s: IPv6 CIDR value %q should be in RFC 5952 canonical format (%q)", path, value, prefix.String()))
	}
	return w
}
