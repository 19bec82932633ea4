package validation

import (
	"fmt"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func validateLease(l *coordinationv1.Lease) field.ErrorList {
	var errs field.ErrorList
	specPath := field.NewPath("spec")
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(specPath.Child("leaseDurationSeconds"), *d, "must be greater than 0"))
	}
	if t := l.Spec.LeaseTransitions; t != nil && *t < 0 {
		errs = append(errs, field.Invalid(specPath.Child("leaseTransitions"), *t, isNegativeErrorMsg))
	}
	return errs
}

// EndpointSlice limits, Kubernetes' own: they keep a slice small enough to
// send to every node's proxy on each change.
const (
	maxEndpointsPerSlice = 1000
	maxPortsPerSlice     = 100
	maxAddressesPerEndpt = 100
)

func validateEndpointSlice(es *discoveryv1.EndpointSlice) field.ErrorList {
	var errs field.ErrorList
	types := []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN}
	switch es.AddressType {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN:
	case "":
		errs = append(errs, field.Required(field.NewPath("addressType"), ""))
	default:
		errs = append(errs, field.NotSupported(field.NewPath("addressType"), es.AddressType, types))
	}

	epPath := field.NewPath("endpoints")
	if len(es.Endpoints) > maxEndpointsPerSlice {
		errs = append(errs, field.TooMany(epPath, len(es.Endpoints), maxEndpointsPerSlice))
	}
	for i, ep := range es.Endpoints {
		p := epPath.Index(i)
		addrPath := p.Child("addresses")
		if len(ep.Addresses) == 0 {
			errs = append(errs, field.Required(addrPath, "must contain at least 1 address"))
		} else if len(ep.Addresses) > maxAddressesPerEndpt {
			errs = append(errs, field.TooMany(addrPath, len(ep.Addresses), maxAddressesPerEndpt))
		}
		for j, addr := range ep.Addresses {
			ap := addrPath.Index(j)
			switch es.AddressType {
			case discoveryv1.AddressTypeIPv4:
				errs = append(errs, validation.IsValidIP(ap, addr)...)
				if !strings.Contains(addr, ".") || strings.Contains(addr, ":") {
					errs = append(errs, field.Invalid(ap, addr, "must be an IPv4 address"))
				}
			case discoveryv1.AddressTypeIPv6:
				errs = append(errs, validation.IsValidIP(ap, addr)...)
				if !strings.Contains(addr, ":") {
					errs = append(errs, field.Invalid(ap, addr, "must be an IPv6 address"))
				}
			case discoveryv1.AddressTypeFQDN:
				errs = append(errs, validation.IsFullyQualifiedDomainName(ap, addr)...)
			}
		}
		if ep.NodeName != nil {
			for _, msg := range apivalidation.NameIsDNSSubdomain(*ep.NodeName, false) {
				errs = append(errs, field.Invalid(p.Child("nodeName"), *ep.NodeName, msg))
			}
		}
		if ep.Hostname != nil {
			errs = append(errs, dns1123Label(*ep.Hostname, p.Child("hostname"))...)
		}
	}

	portsPath := field.NewPath("ports")
	if len(es.Ports) > maxPortsPerSlice {
		errs = append(errs, field.TooMany(portsPath, len(es.Ports), maxPortsPerSlice))
	}
	names := sets.New[string]()
	for i, port := range es.Ports {
		p := portsPath.Index(i)
		name := ""
		if port.Name != nil {
			name = *port.Name
		}
		if name != "" {
			errs = append(errs, dns1123Label(name, p.Child("name"))...)
		}
		if names.Has(name) {
			errs = append(errs, field.Duplicate(p.Child("name"), name))
		}
		names.Insert(name)
		if port.Protocol == nil {
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		} else {
			errs = append(errs, validateProtocol(*port.Protocol, p.Child("protocol"))...)
		}
		if port.Port != nil {
			for _, msg := range validation.IsInRange(int(*port.Port), 0, 65535) {
				errs = append(errs, field.Invalid(p.Child("port"), *port.Port, msg))
			}
		}
	}
	return errs
}

func validateEndpointSliceUpdate(newES, oldES *discoveryv1.EndpointSlice) field.ErrorList {
	return apivalidation.ValidateImmutableField(newES.AddressType, oldES.AddressType, field.NewPath("addressType"))
}

func validateEventsEvent(e *eventsv1.Event) field.ErrorList {
	var errs field.ErrorList
	if e.Type != "" && e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		errs = append(errs, field.NotSupported(field.NewPath("type"), e.Type, []string{corev1.EventTypeNormal, corev1.EventTypeWarning}))
	}
	if e.Regarding.Namespace != "" && e.Namespace != "" && e.Regarding.Namespace != e.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("regarding", "namespace"), e.Regarding.Namespace, "does not match event.namespace"))
	}
	return errs
}

func validatePDB(pdb *policyv1.PodDisruptionBudget) field.ErrorList {
	var errs field.ErrorList
	s := &pdb.Spec
	specPath := field.NewPath("spec")
	if s.MinAvailable != nil && s.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(specPath, s, "minAvailable and maxUnavailable cannot be both set"))
	}
	if s.MinAvailable != nil {
		p := specPath.Child("minAvailable")
		errs = append(errs, validatePositiveIntOrPercent(s.MinAvailable, p)...)
		if intOrPercentValue(s.MinAvailable) > 100 && s.MinAvailable.Type == intstr.String {
			errs = append(errs, field.Invalid(p, s.MinAvailable.StrVal, "must not be greater than 100%"))
		}
	}
	if s.MaxUnavailable != nil {
		p := specPath.Child("maxUnavailable")
		errs = append(errs, validatePositiveIntOrPercent(s.MaxUnavailable, p)...)
		if intOrPercentValue(s.MaxUnavailable) > 100 && s.MaxUnavailable.Type == intstr.String {
			errs = append(errs, field.Invalid(p, s.MaxUnavailable.StrVal, "must not be greater than 100%"))
		}
	}
	if s.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(s.Selector, metav1validation.LabelSelectorValidationOptions{}, specPath.Child("selector"))...)
	}
	if p := s.UnhealthyPodEvictionPolicy; p != nil && *p != policyv1.IfHealthyBudget && *p != policyv1.AlwaysAllow {
		errs = append(errs, field.NotSupported(specPath.Child("unhealthyPodEvictionPolicy"), *p,
			[]policyv1.UnhealthyPodEvictionPolicyType{policyv1.IfHealthyBudget, policyv1.AlwaysAllow}))
	}
	return errs
}

// RBAC

func validateRole(r *rbacv1.Role) field.ErrorList {
	return validatePolicyRules(r.Rules, true)
}

func validateClusterRole(r *rbacv1.ClusterRole) field.ErrorList {
	errs := validatePolicyRules(r.Rules, false)
	if r.AggregationRule != nil {
		selPath := field.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(r.AggregationRule.ClusterRoleSelectors) == 0 {
			errs = append(errs, field.Required(selPath, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		for i := range r.AggregationRule.ClusterRoleSelectors {
			errs = append(errs, metav1validation.ValidateLabelSelector(&r.AggregationRule.ClusterRoleSelectors[i], metav1validation.LabelSelectorValidationOptions{}, selPath.Index(i))...)
		}
	}
	return errs
}

func validatePolicyRules(rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, rule := range rules {
		p := field.NewPath("rules").Index(i)
		if len(rule.Verbs) == 0 {
			errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
		}
		if len(rule.NonResourceURLs) > 0 {
			if namespaced {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			continue
		}
		if len(rule.APIGroups) == 0 {
			errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(rule.Resources) == 0 {
			errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
		}
	}
	return errs
}

func validateRoleBinding(rb *rbacv1.RoleBinding) field.ErrorList {
	return validateBinding(rb.RoleRef, rb.Subjects, true)
}

func validateClusterRoleBinding(rb *rbacv1.ClusterRoleBinding) field.ErrorList {
	return validateBinding(rb.RoleRef, rb.Subjects, false)
}

func validateBinding(ref rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	refPath := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(refPath.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	if namespaced {
		if ref.Kind != "Role" && ref.Kind != "ClusterRole" {
			errs = append(errs, field.NotSupported(refPath.Child("kind"), ref.Kind, []string{"Role", "ClusterRole"}))
		}
	} else if ref.Kind != "ClusterRole" {
		errs = append(errs, field.NotSupported(refPath.Child("kind"), ref.Kind, []string{"ClusterRole"}))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(refPath.Child("name"), ""))
	} else {
		for _, msg := range path.ValidatePathSegmentName(ref.Name, false) {
			errs = append(errs, field.Invalid(refPath.Child("name"), ref.Name, msg))
		}
	}
	for i, s := range subjects {
		errs = append(errs, validateSubject(s, namespaced, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

func validateSubject(s rbacv1.Subject, namespaced bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range apivalidation.NameIsDNSSubdomain(s.Name, false) {
				errs = append(errs, field.Invalid(fldPath.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(fldPath.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			errs = append(errs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}

// A binding's roleRef is fixed: changing which role a binding grants would
// silently change what its subjects may do; make a new binding instead.
func immutableRoleRef(newRef, oldRef rbacv1.RoleRef) field.ErrorList {
	if newRef != oldRef {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), newRef, "cannot change roleRef")}
	}
	return nil
}

func validateRoleBindingUpdate(n, o *rbacv1.RoleBinding) field.ErrorList {
	return immutableRoleRef(n.RoleRef, o.RoleRef)
}

func validateClusterRoleBindingUpdate(n, o *rbacv1.ClusterRoleBinding) field.ErrorList {
	return immutableRoleRef(n.RoleRef, o.RoleRef)
}

// Priority classes: user classes stay below the two system classes so that
// node- and cluster-critical pods can always preempt them.
const (
	HighestUserDefinablePriority int32 = 1000000000
	systemClusterCritical              = "system-cluster-critical"
	systemNodeCritical                 = "system-node-critical"
	systemPriorityClassPrefix          = "system-"
)

var systemPriorities = map[string]int32{
	systemClusterCritical: 2000000000,
	systemNodeCritical:    2000001000,
}

func validatePriorityClass(pc *schedulingv1.PriorityClass) field.ErrorList {
	var errs field.ErrorList
	if strings.HasPrefix(pc.Name, systemPriorityClassPrefix) {
		value, known := systemPriorities[pc.Name]
		switch {
		case !known:
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"),
				fmt.Sprintf("priority class names with '%s' prefix are reserved for system use only. error: %v is not a known system priority class", systemPriorityClassPrefix, pc.Name)))
		case value != pc.Value:
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"),
				fmt.Sprintf("priority class names with '%s' prefix are reserved for system use only. error: value of %v PriorityClass must be %v", systemPriorityClassPrefix, pc.Name, value)))
		}
	} else if pc.Value > HighestUserDefinablePriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"), fmt.Sprintf("maximum allowed value of a user defined priority is %v", HighestUserDefinablePriority)))
	}
	if p := pc.PreemptionPolicy; p != nil && *p != corev1.PreemptLowerPriority && *p != corev1.PreemptNever {
		errs = append(errs, field.NotSupported(field.NewPath("preemptionPolicy"), *p, []corev1.PreemptionPolicy{corev1.PreemptNever, corev1.PreemptLowerPriority}))
	}
	return errs
}

func validatePriorityClassUpdate(n, o *schedulingv1.PriorityClass) field.ErrorList {
	var errs field.ErrorList
	// Pods carry the value they were admitted with; changing it would make
	// running and new pods disagree about their priority.
	if n.Value != o.Value {
		errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
	}
	errs = append(errs, apivalidation.ValidateImmutableField(n.PreemptionPolicy, o.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
	return errs
}
