package validation

import (
	"fmt"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
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
