package services

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// checkFamilies refuses, as Kubernetes' Service registry does on a
// single-stack cluster, IP family fields the cluster cannot serve: skiff's
// Service network has one family, the service CIDR's. Without this, a
// Service asking for IPv6 was stored with an IPv4 cluster IP under
// ipFamilies [IPv6] (and got empty IPv6 EndpointSlices), and one demanding
// dual-stack was stored single-stack.
//
// A headless Service without selector is let through with any families
// once its policy agrees with them, as Kubernetes lets it: its endpoints
// are the user's, and it has no cluster IP.
func (l *Lifecycle) checkFamilies(svc *corev1.Service) error {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	s := &svc.Spec
	policy := corev1.IPFamilyPolicySingleStack
	if s.IPFamilyPolicy != nil {
		policy = *s.IPFamilyPolicy
	}
	policyPath := field.NewPath("spec", "ipFamilyPolicy")
	var errs field.ErrorList
	for i, fam := range s.IPFamilies {
		if slices.Contains(s.IPFamilies[:i], fam) {
			errs = append(errs, field.Duplicate(field.NewPath("spec", "ipFamilies").Index(i), fam))
		}
	}
	ipsPath := field.NewPath("spec", "clusterIPs")
	if len(s.ClusterIPs) == 2 && s.ClusterIPs[0] != corev1.ClusterIPNone && familyOf(s.ClusterIPs[0]) == familyOf(s.ClusterIPs[1]) {
		errs = append(errs, field.Invalid(ipsPath, s.ClusterIPs, "may specify no more than one IP for each IP family"))
	}
	if policy == corev1.IPFamilyPolicySingleStack && len(s.ClusterIPs) == 2 {
		errs = append(errs, field.Invalid(policyPath, policy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"))
	}
	if policy == corev1.IPFamilyPolicySingleStack && len(s.IPFamilies) == 2 {
		errs = append(errs, field.Invalid(policyPath, policy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
	}
	served := corev1.IPv4Protocol
	if l.IPs.CIDR().Addr().Is6() {
		served = corev1.IPv6Protocol
	}
	// A cluster IP beyond the listed families names its own family, which
	// must be the cluster's (Kubernetes infers the family from it).
	for i := len(s.IPFamilies); i < len(s.ClusterIPs); i++ {
		if fam := familyOf(s.ClusterIPs[i]); fam != "" && fam != served {
			errs = append(errs, field.Invalid(ipsPath.Index(i), s.ClusterIPs, string(fam)+" is not configured on this cluster"))
		}
	}
	switch {
	case len(errs) > 0:
		return errors.NewInvalid(serviceKind, svc.Name, errs)
	case s.ClusterIP == corev1.ClusterIPNone && len(s.Selector) == 0:
		return nil
	}
	if policy == corev1.IPFamilyPolicyRequireDualStack {
		errs = append(errs, field.Invalid(policyPath, policy, "this cluster is not configured for dual-stack services"))
	}
	for i, fam := range s.IPFamilies {
		if fam == served {
			continue
		}
		// A family the defaults took from a requested cluster IP is told
		// on that IP, as Kubernetes tells a family it infers from one.
		if i < len(s.ClusterIPs) && familyOf(s.ClusterIPs[i]) == fam {
			errs = append(errs, field.Invalid(ipsPath.Index(i), s.ClusterIPs, string(fam)+" is not configured on this cluster"))
			continue
		}
		errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilies").Index(i), fam, "not configured on this cluster"))
	}
	if len(errs) > 0 {
		return errors.NewInvalid(serviceKind, svc.Name, errs)
	}
	return nil
}

// familiesChanged: an update that can make the Service's families wrong
// (new families, cluster IPs or policy, or a type that now needs a cluster
// IP), so
// checkFamilies judges it; other updates of a stored Service are not
// judged again.
func familiesChanged(svc, old *corev1.Service) bool {
	return !slices.Equal(svc.Spec.IPFamilies, old.Spec.IPFamilies) ||
		!slices.Equal(svc.Spec.ClusterIPs, old.Spec.ClusterIPs) ||
		!sameString(svc.Spec.IPFamilyPolicy, old.Spec.IPFamilyPolicy) ||
		(old.Spec.Type == corev1.ServiceTypeExternalName) != (svc.Spec.Type == corev1.ServiceTypeExternalName)
}

// familyOf is the family of an IP literal, "" for anything else ("None").
func familyOf(ip string) corev1.IPFamily {
	a, err := netip.ParseAddr(ip)
	switch {
	case err != nil:
		return ""
	case a.Is4() || a.Is4In6():
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}
