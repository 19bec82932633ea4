package validation

import (
	"fmt"
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// The node port range skiff serves, Kubernetes' default.
const (
	NodePortMin = 30000
	NodePortMax = 32767
	// maxClientIPAffinitySeconds is one day, Kubernetes' upper bound.
	maxClientIPAffinitySeconds = 86400
)

var (
	supportedServiceTypes     = []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeExternalName, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort}
	supportedSessionAffinity  = []corev1.ServiceAffinity{corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone}
	supportedExternalTraffic  = []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal}
	supportedInternalTraffic  = []corev1.ServiceInternalTrafficPolicy{corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal}
	supportedIPFamilyPolicies = []corev1.IPFamilyPolicy{corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack, corev1.IPFamilyPolicySingleStack}
)

func isHeadless(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP == corev1.ClusterIPNone || len(svc.Spec.ClusterIPs) > 0 && svc.Spec.ClusterIPs[0] == corev1.ClusterIPNone
}

func validateService(svc *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	s := &svc.Spec
	specPath := field.NewPath("spec")
	portsPath := specPath.Child("ports")
	headless := isHeadless(svc)

	if len(s.Ports) == 0 && !headless && s.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(portsPath, ""))
	}
	switch s.Type {
	case corev1.ServiceTypeLoadBalancer:
		// Port 10250 (the kubelet's) may be exposed: v1.33 dropped that
		// refusal (kubernetes#129174).
		if headless {
			errs = append(errs, field.Invalid(specPath.Child("clusterIPs").Index(0), corev1.ClusterIPNone, "may not be set to 'None' for LoadBalancer services"))
		}
	case corev1.ServiceTypeNodePort:
		if headless {
			errs = append(errs, field.Invalid(specPath.Child("clusterIPs").Index(0), corev1.ClusterIPNone, "may not be set to 'None' for NodePort services"))
		}
	case corev1.ServiceTypeExternalName:
		if len(s.ClusterIPs) > 0 || s.ClusterIP != "" {
			errs = append(errs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if cname := strings.TrimSuffix(s.ExternalName, "."); cname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(cname) {
				errs = append(errs, field.Invalid(specPath.Child("externalName"), cname, msg))
			}
		} else {
			errs = append(errs, field.Required(specPath.Child("externalName"), ""))
		}
	}

	names := sets.New[string]()
	requireName := len(s.Ports) > 1
	for i := range s.Ports {
		errs = append(errs, validateServicePort(&s.Ports[i], requireName, names, portsPath.Index(i))...)
	}
	if s.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabels(s.Selector, specPath.Child("selector"))...)
	}

	switch s.SessionAffinity {
	case "":
		errs = append(errs, field.Required(specPath.Child("sessionAffinity"), ""))
	case corev1.ServiceAffinityClientIP:
		cfg := s.SessionAffinityConfig
		if cfg == nil || cfg.ClientIP == nil || cfg.ClientIP.TimeoutSeconds == nil {
			errs = append(errs, field.Required(specPath.Child("sessionAffinityConfig").Child("clientIP").Child("timeoutSeconds"),
				fmt.Sprintf("when session affinity type is %s", corev1.ServiceAffinityClientIP)))
		} else if t := *cfg.ClientIP.TimeoutSeconds; t <= 0 || t > maxClientIPAffinitySeconds {
			errs = append(errs, field.Invalid(specPath.Child("sessionAffinityConfig").Child("clientIP").Child("timeoutSeconds"), t,
				fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPAffinitySeconds)))
		}
	case corev1.ServiceAffinityNone:
		if s.SessionAffinityConfig != nil {
			errs = append(errs, field.Forbidden(specPath.Child("sessionAffinityConfig"), fmt.Sprintf("must not be set when session affinity is %s", s.SessionAffinity)))
		}
	default:
		errs = append(errs, field.NotSupported(specPath.Child("sessionAffinity"), s.SessionAffinity, supportedSessionAffinity))
	}

	errs = append(errs, validateClusterIPs(svc, specPath)...)
	for i, ip := range s.ExternalIPs {
		errs = append(errs, validation.IsValidIP(specPath.Child("externalIPs").Index(i), ip)...)
	}

	switch s.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName:
	case "":
		errs = append(errs, field.Required(specPath.Child("type"), ""))
	default:
		errs = append(errs, field.NotSupported(specPath.Child("type"), s.Type, supportedServiceTypes))
	}

	nodePorts := sets.New[string]()
	ports := sets.New[string]()
	for i, p := range s.Ports {
		portPath := portsPath.Index(i)
		if p.NodePort != 0 {
			switch s.Type {
			case corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
				// Kubernetes' allocator reports this when it reserves the port.
				if p.NodePort < NodePortMin || p.NodePort > NodePortMax {
					errs = append(errs, field.Invalid(portPath.Child("nodePort"), p.NodePort,
						fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %d-%d", NodePortMin, NodePortMax)))
				}
			default:
				errs = append(errs, field.Forbidden(portPath.Child("nodePort"), fmt.Sprintf("may not be used when `type` is '%s'", s.Type)))
			}
			key := fmt.Sprintf("%s/%d", p.Protocol, p.NodePort)
			if nodePorts.Has(key) {
				errs = append(errs, field.Duplicate(portPath.Child("nodePort"), p.NodePort))
			}
			nodePorts.Insert(key)
		}
		key := fmt.Sprintf("%s/%d", p.Protocol, p.Port)
		if ports.Has(key) {
			errs = append(errs, field.Duplicate(portPath, corev1.ServicePort{Port: p.Port, Protocol: p.Protocol}))
		}
		ports.Insert(key)
	}

	if s.ExternalTrafficPolicy != "" {
		switch s.ExternalTrafficPolicy {
		case corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal:
			if s.Type != corev1.ServiceTypeNodePort && s.Type != corev1.ServiceTypeLoadBalancer {
				errs = append(errs, field.Invalid(specPath.Child("externalTrafficPolicy"), s.ExternalTrafficPolicy,
					"may only be set when `type` is 'NodePort' or 'LoadBalancer'"))
			}
		default:
			errs = append(errs, field.NotSupported(specPath.Child("externalTrafficPolicy"), s.ExternalTrafficPolicy, supportedExternalTraffic))
		}
	}
	if s.HealthCheckNodePort != 0 && (s.Type != corev1.ServiceTypeLoadBalancer || s.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal) {
		errs = append(errs, field.Invalid(specPath.Child("healthCheckNodePort"), s.HealthCheckNodePort,
			"may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
	}
	if p := s.InternalTrafficPolicy; p != nil && *p != corev1.ServiceInternalTrafficPolicyCluster && *p != corev1.ServiceInternalTrafficPolicyLocal {
		errs = append(errs, field.NotSupported(specPath.Child("internalTrafficPolicy"), *p, supportedInternalTraffic))
	}
	if p := s.IPFamilyPolicy; p != nil {
		switch *p {
		case corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack:
		default:
			errs = append(errs, field.NotSupported(specPath.Child("ipFamilyPolicy"), *p, supportedIPFamilyPolicies))
		}
	}
	for i, fam := range s.IPFamilies {
		if fam != corev1.IPv4Protocol && fam != corev1.IPv6Protocol {
			errs = append(errs, field.NotSupported(specPath.Child("ipFamilies").Index(i), fam, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}))
		}
	}
	return errs
}

// validateServiceRouting checks what a Service asks of the EndpointSlice
// controller's zone hints, as v1.33's ValidateService. Creates run it
// whole; updates (validateServiceUpdate) only where the value changed, as
// skiff stored both unjudged before, and a Service refused on every write
// could not even lose its finalizers.
func validateServiceRouting(svc *corev1.Service, annotations, trafficDistribution bool) field.ErrorList {
	var errs field.ErrorList
	// Both topology annotations mean the same (the older one is deprecated):
	// a Service may carry both only when they agree.
	hints, hintsSet := svc.Annotations[corev1.DeprecatedAnnotationTopologyAwareHints]
	if mode, modeSet := svc.Annotations[corev1.AnnotationTopologyMode]; annotations && modeSet && hintsSet && mode != hints {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "annotations").Key(corev1.AnnotationTopologyMode), mode,
			fmt.Sprintf("must match annotations[%s] when both are specified", corev1.DeprecatedAnnotationTopologyAwareHints)))
	}
	// PreferSameZone and PreferSameNode need Kubernetes v1.33's alpha
	// PreferSameTrafficDistribution gate (off), so v1.33 refuses them too.
	if td := svc.Spec.TrafficDistribution; trafficDistribution && td != nil && *td != corev1.ServiceTrafficDistributionPreferClose {
		errs = append(errs, field.NotSupported(field.NewPath("spec", "trafficDistribution"), *td, []string{corev1.ServiceTrafficDistributionPreferClose}))
	}
	return errs
}

// validateLoadBalancerSourceRanges checks spec.loadBalancerSourceRanges,
// or the older service.beta.kubernetes.io/load-balancer-source-ranges
// annotation when the field is empty, as v1.33's ValidateService: only a
// LoadBalancer may have them, and each must be a CIDR. The path keeps
// Kubernetes' capital L (spec.LoadBalancerSourceRanges).
//
// CIDRs are parsed as v1.33 does with its StrictIPCIDRValidation gate off
// (the default): leniently, as netutils.ParseCIDRSloppy (leading zeros,
// bits past the prefix and IPv4-mapped IPv6 pass, with the warnings of
// warnings/), and with spaces around each value allowed. (spec.loadBalancerIP
// is not judged at all in v1.33, only warned about.)
//
// old is the stored Service on update, nil on create. As v1.33's
// ValidateServiceUpdate, a CIDR the stored Service already had is not
// judged again, and an unchanged annotation is not; the type rule is
// judged unless neither the type nor the values changed (a Service skiff
// stored before these rules, which Kubernetes could not hold, can still
// be written and mended).
func validateLoadBalancerSourceRanges(svc, old *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	const onlyLB = "may only be used when `type` is 'LoadBalancer'"
	key := corev1.AnnotationLoadBalancerSourceRangesKey
	isLB := svc.Spec.Type == corev1.ServiceTypeLoadBalancer
	sameType := old != nil && old.Spec.Type == svc.Spec.Type
	if ranges := svc.Spec.LoadBalancerSourceRanges; len(ranges) > 0 {
		p := field.NewPath("spec", "LoadBalancerSourceRanges")
		if !isLB && !(sameType && slices.Equal(ranges, old.Spec.LoadBalancerSourceRanges)) {
			errs = append(errs, field.Forbidden(p, onlyLB))
		}
		var stored []string
		if old != nil {
			for _, v := range old.Spec.LoadBalancerSourceRanges {
				stored = append(stored, strings.TrimSpace(v))
			}
		}
		for i, v := range ranges {
			errs = append(errs, validation.IsValidCIDRForLegacyField(p.Index(i), strings.TrimSpace(v), false, stored)...)
		}
	} else if val, ok := svc.Annotations[key]; ok {
		p := field.NewPath("metadata", "annotations").Key(key)
		oldVal, oldOK := "", false
		if old != nil {
			oldVal, oldOK = old.Annotations[key]
		}
		unchanged := oldOK && oldVal == val
		if !isLB && !(sameType && unchanged) {
			errs = append(errs, field.Forbidden(p, onlyLB))
		}
		if val = strings.TrimSpace(val); val != "" && !unchanged {
			for _, v := range strings.Split(val, ",") {
				errs = append(errs, validation.IsValidCIDRForLegacyField(p, strings.TrimSpace(v), false, nil)...)
			}
		}
	}
	return errs
}

// validateLoadBalancerFields checks, as v1.33's ValidateService, the
// fields only a LoadBalancer has: loadBalancerClass (a qualified name,
// fixed for as long as the Service stays a LoadBalancer: the controller
// that provisioned its load balancer keys on it) and
// allocateLoadBalancerNodePorts. old is the stored Service on update, nil
// on create; on update a field is judged only when it changed or the type
// did, so a Service skiff stored before these rules can still be written
// (a change of type away from LoadBalancer drops both when the client sent
// them back unchanged: services.PrepareUpdate).
func validateLoadBalancerFields(svc, old *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	classPath := field.NewPath("spec", "loadBalancerClass")
	isLB := svc.Spec.Type == corev1.ServiceTypeLoadBalancer
	sameType := old != nil && old.Spec.Type == svc.Spec.Type
	if isLB && sameType && !ptr.Equal(svc.Spec.LoadBalancerClass, old.Spec.LoadBalancerClass) {
		errs = append(errs, field.Invalid(classPath, svc.Spec.LoadBalancerClass, "may not change once set"))
	}
	if class := svc.Spec.LoadBalancerClass; class != nil && !(sameType && ptr.Equal(class, old.Spec.LoadBalancerClass)) {
		if isLB {
			for _, msg := range validation.IsQualifiedName(*class) {
				errs = append(errs, field.Invalid(classPath, *class, msg))
			}
		} else {
			errs = append(errs, field.Forbidden(classPath, "may only be used when `type` is 'LoadBalancer'"))
		}
	}
	if a := svc.Spec.AllocateLoadBalancerNodePorts; a != nil && !isLB && !(sameType && ptr.Equal(a, old.Spec.AllocateLoadBalancerNodePorts)) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	return errs
}

// validateExternalNameFamilies refuses, as v1.33's ValidateService, IP
// family fields on an ExternalName Service, which has no cluster IP. On
// update (old not nil) a field is judged only when it changed, so an
// ExternalName skiff stored with them can still be written; a change of
// type to ExternalName drops them when sent back unchanged
// (services.PrepareUpdate).
func validateExternalNameFamilies(svc, old *corev1.Service) field.ErrorList {
	if svc.Spec.Type != corev1.ServiceTypeExternalName {
		return nil
	}
	var errs field.ErrorList
	const msg = "may not be set for ExternalName services"
	if len(svc.Spec.IPFamilies) > 0 && !(old != nil && slices.Equal(svc.Spec.IPFamilies, old.Spec.IPFamilies)) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "ipFamilies"), msg))
	}
	if svc.Spec.IPFamilyPolicy != nil && !(old != nil && ptr.Equal(svc.Spec.IPFamilyPolicy, old.Spec.IPFamilyPolicy)) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "ipFamilyPolicy"), msg))
	}
	return errs
}

func validateServicePort(p *corev1.ServicePort, requireName bool, names sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && p.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	} else if p.Name != "" {
		errs = append(errs, dns1123Label(p.Name, fldPath.Child("name"))...)
		if names.Has(p.Name) {
			errs = append(errs, field.Duplicate(fldPath.Child("name"), p.Name))
		}
		names.Insert(p.Name)
	}
	for _, msg := range validation.IsValidPortNum(int(p.Port)) {
		errs = append(errs, field.Invalid(fldPath.Child("port"), p.Port, msg))
	}
	errs = append(errs, validateProtocol(p.Protocol, fldPath.Child("protocol"))...)
	errs = append(errs, validatePortNumOrName(p.TargetPort, fldPath.Child("targetPort"))...)
	if p.AppProtocol != nil {
		for _, msg := range validation.IsQualifiedName(*p.AppProtocol) {
			errs = append(errs, field.Invalid(fldPath.Child("appProtocol"), *p.AppProtocol, msg))
		}
	}
	return errs
}

// validateClusterIPs checks clusterIP/clusterIPs: each an IP, or "None" alone
// for a headless service, with clusterIP equal to clusterIPs[0].
func validateClusterIPs(svc *corev1.Service, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	s := &svc.Spec
	if s.ClusterIP != "" && (len(s.ClusterIPs) == 0 || s.ClusterIP != s.ClusterIPs[0]) {
		errs = append(errs, field.Invalid(specPath.Child("clusterIPs"), s.ClusterIPs, "must be empty or the first value must match spec.clusterIP"))
	}
	// As v1.33, clusterIPs alone is refused rather than replaced by an
	// allocated address (an ExternalName's are refused above).
	if s.ClusterIP == "" && len(s.ClusterIPs) > 0 && s.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Invalid(specPath.Child("clusterIPs"), s.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}
	if len(s.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(specPath.Child("clusterIPs"), s.ClusterIPs, "may only hold up to 2 values"))
	}
	for i, ip := range s.ClusterIPs {
		p := specPath.Child("clusterIPs").Index(i)
		if ip == corev1.ClusterIPNone {
			if i != 0 || len(s.ClusterIPs) > 1 {
				errs = append(errs, field.Invalid(p, ip, "'None' must be the first and only value"))
			}
			continue
		}
		ipErrs := validation.IsValidIP(p, ip)
		errs = append(errs, ipErrs...)
		// Each cluster IP must belong to the family listed at its index.
		if len(ipErrs) == 0 && i < len(s.IPFamilies) {
			isV6 := net.ParseIP(ip).To4() == nil
			switch {
			case s.IPFamilies[i] == corev1.IPv4Protocol && isV6:
				errs = append(errs, field.Invalid(p, ip, fmt.Sprintf("expected an IPv4 value as indicated by `ipFamilies[%v]`", i)))
			case s.IPFamilies[i] == corev1.IPv6Protocol && !isV6:
				errs = append(errs, field.Invalid(p, ip, fmt.Sprintf("expected an IPv6 value as indicated by `ipFamilies[%v]`", i)))
			}
		}
	}
	return errs
}

// validateServiceUpdate keeps an allocated cluster IP for the service's life,
// unless the service moves to or from ExternalName (which has none).
func validateServiceUpdate(newSvc, oldSvc *corev1.Service) field.ErrorList {
	annotationsChanged := newSvc.Annotations[corev1.AnnotationTopologyMode] != oldSvc.Annotations[corev1.AnnotationTopologyMode] ||
		newSvc.Annotations[corev1.DeprecatedAnnotationTopologyAwareHints] != oldSvc.Annotations[corev1.DeprecatedAnnotationTopologyAwareHints]
	errs := validateServiceRouting(newSvc, annotationsChanged, !ptr.Equal(newSvc.Spec.TrafficDistribution, oldSvc.Spec.TrafficDistribution))
	errs = append(errs, validateLoadBalancerSourceRanges(newSvc, oldSvc)...)
	errs = append(errs, validateExternalIPsNonSpecial(newSvc, oldSvc)...)
	errs = append(errs, validateLoadBalancerFields(newSvc, oldSvc)...)
	errs = append(errs, validateExternalNameFamilies(newSvc, oldSvc)...)
	if newSvc.Spec.Type == corev1.ServiceTypeExternalName || oldSvc.Spec.Type == corev1.ServiceTypeExternalName {
		return errs
	}
	if len(oldSvc.Spec.ClusterIPs) > 0 && (len(newSvc.Spec.ClusterIPs) == 0 || newSvc.Spec.ClusterIPs[0] != oldSvc.Spec.ClusterIPs[0]) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), newSvc.Spec.ClusterIPs, "may not change once set"))
	} else if oldSvc.Spec.ClusterIP != "" && newSvc.Spec.ClusterIP != oldSvc.Spec.ClusterIP {
		errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIP"), newSvc.Spec.ClusterIP, "field is immutable"))
	}
	return errs
}

// validateExternalIPsNonSpecial judges the valid external IPs of svc by
// nonSpecialIP; on update (old not nil) those old already had are not
// judged again, so a Service skiff stored before this rule, which
// Kubernetes could not hold, can still be written and mended.
func validateExternalIPsNonSpecial(svc, old *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	for i, ip := range svc.Spec.ExternalIPs {
		if net.ParseIP(ip) == nil || old != nil && slices.Contains(old.Spec.ExternalIPs, ip) {
			continue // invalid ones are refused by validateService
		}
		errs = append(errs, nonSpecialIP(field.NewPath("spec", "externalIPs").Index(i), ip)...)
	}
	return errs
}

// nonSpecialIP refuses, as v1.33's ValidateNonSpecialIP does for external
// IPs, addresses no Service can meaningfully be reached at from outside:
// unspecified and loopback ones, and link-local ones (node-centric: the
// cloud metadata service lives there). Endpoints and EndpointSlices are
// not judged by it here: skiff's own "kubernetes" Endpoints name the API
// server's bind address, which tests keep on loopback.
func nonSpecialIP(p *field.Path, value string) field.ErrorList {
	ip := net.ParseIP(value)
	var errs field.ErrorList
	if ip.IsUnspecified() {
		errs = append(errs, field.Invalid(p, value, fmt.Sprintf("may not be unspecified (%v)", value)))
	}
	if ip.IsLoopback() {
		errs = append(errs, field.Invalid(p, value, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if ip.IsLinkLocalUnicast() {
		errs = append(errs, field.Invalid(p, value, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if ip.IsLinkLocalMulticast() {
		errs = append(errs, field.Invalid(p, value, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return errs
}
