package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// The rules of networking.k8s.io/v1, after Kubernetes v1.33's
// pkg/apis/networking/validation (ValidateIngressCreate/Update,
// ValidateIngressStatusUpdate, ValidateIngressClass/Update,
// ValidateNetworkPolicy/Update), with its field paths and messages. IP and
// CIDR values are read as v1.33 reads these legacy fields while its
// StrictIPCIDRValidation gate is off (leading zeros and bits beyond the
// prefix are accepted; the warnings package points them out), and a value
// the stored object already had is accepted again as it is.

const (
	annotationIngressClass       = "kubernetes.io/ingress.class"
	maxLenIngressClassController = 250
)

var (
	ingressPathTypes     = []string{string(networkingv1.PathTypeExact), string(networkingv1.PathTypeImplementationSpecific), string(networkingv1.PathTypePrefix)}
	invalidPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	invalidPathSuffixes  = []string{"/..", "/."}
	parametersScopes     = []string{networkingv1.IngressClassParametersReferenceScopeCluster, networkingv1.IngressClassParametersReferenceScopeNamespace}
)

// ingressOptions let an update keep what an older Kubernetes stored
// (upstream's IngressValidationOptions).
type ingressOptions struct {
	allowInvalidSecretName       bool
	allowInvalidWildcardHostRule bool
}

func validateIngressCreate(ing *networkingv1.Ingress) field.ErrorList {
	errs := validateIngressSpec(&ing.Spec, field.NewPath("spec"), ingressOptions{})
	if v, ok := ing.Annotations[annotationIngressClass]; ok && ing.Spec.IngressClassName != nil && v != *ing.Spec.IngressClassName {
		errs = append(errs, field.Invalid(field.NewPath("annotations").Child(annotationIngressClass), v, "must match `ingressClassName` when both are specified"))
	}
	return errs
}

// validateIngressUpdate is the whole of an update's rules: Kubernetes
// checks the spec of an update with the options the stored object earns,
// not as a new object.
func validateIngressUpdate(ing, old *networkingv1.Ingress) field.ErrorList {
	opts := ingressOptions{}
	for _, tls := range old.Spec.TLS {
		if len(tlsSecretNameProblems(tls.SecretName)) > 0 {
			opts.allowInvalidSecretName = true
		}
	}
	for _, r := range old.Spec.Rules {
		if strings.Contains(r.Host, "*") && len(validateIngressRuleValue(&r.IngressRuleValue, nil)) > 0 {
			opts.allowInvalidWildcardHostRule = true
		}
	}
	return validateIngressSpec(&ing.Spec, field.NewPath("spec"), opts)
}

func tlsSecretNameProblems(name string) []string {
	if name == "" {
		return nil
	}
	return apivalidation.NameIsDNSSubdomain(name, false)
}

func validateIngressSpec(spec *networkingv1.IngressSpec, p *field.Path, opts ingressOptions) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Rules) == 0 && spec.DefaultBackend == nil {
		errs = append(errs, field.Invalid(p, spec.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if spec.DefaultBackend != nil {
		errs = append(errs, validateIngressBackend(spec.DefaultBackend, p.Child("defaultBackend"))...)
	}
	for i, r := range spec.Rules {
		rp := p.Child("rules").Index(i)
		wildcard := false
		if r.Host != "" {
			hp := rp.Child("host")
			if netutils.ParseIPSloppy(r.Host) != nil {
				errs = append(errs, field.Invalid(hp, r.Host, "must be a DNS name, not an IP address"))
			}
			if strings.Contains(r.Host, "*") {
				errs = append(errs, invalidEach(hp, r.Host, validation.IsWildcardDNS1123Subdomain(r.Host))...)
				wildcard = true
			} else {
				errs = append(errs, invalidEach(hp, r.Host, validation.IsDNS1123Subdomain(r.Host))...)
			}
		}
		if !wildcard || !opts.allowInvalidWildcardHostRule {
			errs = append(errs, validateIngressRuleValue(&r.IngressRuleValue, rp)...)
		}
	}
	for i, tls := range spec.TLS {
		tp := p.Child("tls").Index(i)
		for j, host := range tls.Hosts {
			check := validation.IsDNS1123Subdomain
			if strings.Contains(host, "*") {
				check = validation.IsWildcardDNS1123Subdomain
			}
			errs = append(errs, invalidEach(tp.Child("hosts").Index(j), host, check(host))...)
		}
		if !opts.allowInvalidSecretName {
			errs = append(errs, invalidEach(tp.Child("secretName"), tls.SecretName, tlsSecretNameProblems(tls.SecretName))...)
		}
	}
	if spec.IngressClassName != nil {
		errs = append(errs, invalidEach(p.Child("ingressClassName"), *spec.IngressClassName, apivalidation.NameIsDNSSubdomain(*spec.IngressClassName, false))...)
	}
	return errs
}

// invalidEach turns each message of a value check into an Invalid error.
func invalidEach(p *field.Path, value any, msgs []string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(p, value, msg))
	}
	return errs
}

func validateIngressRuleValue(rule *networkingv1.IngressRuleValue, p *field.Path) field.ErrorList {
	if rule.HTTP == nil {
		return nil
	}
	var errs field.ErrorList
	hp := p.Child("http")
	if len(rule.HTTP.Paths) == 0 {
		errs = append(errs, field.Required(hp.Child("paths"), ""))
	}
	for i := range rule.HTTP.Paths {
		errs = append(errs, validateHTTPIngressPath(&rule.HTTP.Paths[i], hp.Child("paths").Index(i))...)
	}
	return errs
}

func validateHTTPIngressPath(path *networkingv1.HTTPIngressPath, p *field.Path) field.ErrorList {
	if path.PathType == nil {
		return field.ErrorList{field.Required(p.Child("pathType"), "pathType must be specified")}
	}
	var errs field.ErrorList
	pp := p.Child("path")
	switch *path.PathType {
	case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
		if !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(pp, path.Path, "must be an absolute path"))
		}
		for _, seq := range invalidPathSequences {
			if strings.Contains(path.Path, seq) {
				errs = append(errs, field.Invalid(pp, path.Path, fmt.Sprintf("must not contain '%s'", seq)))
			}
		}
		for _, suffix := range invalidPathSuffixes {
			if strings.HasSuffix(path.Path, suffix) {
				errs = append(errs, field.Invalid(pp, path.Path, fmt.Sprintf("cannot end with '%s'", suffix)))
			}
		}
	case networkingv1.PathTypeImplementationSpecific:
		if path.Path != "" && !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(pp, path.Path, "must be an absolute path"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("pathType"), *path.PathType, ingressPathTypes))
	}
	return append(errs, validateIngressBackend(&path.Backend, p.Child("backend"))...)
}

func validateIngressBackend(b *networkingv1.IngressBackend, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case b.Resource != nil && b.Service != nil:
		return field.ErrorList{field.Invalid(p, "", "cannot set both resource and service backends")}
	case b.Resource != nil:
		r, rp := b.Resource, p.Child("resource")
		if r.APIGroup != nil {
			errs = append(errs, invalidEach(rp.Child("apiGroup"), *r.APIGroup, validation.IsDNS1123Subdomain(*r.APIGroup))...)
		}
		errs = append(errs, pathSegment(rp.Child("kind"), r.Kind)...)
		errs = append(errs, pathSegment(rp.Child("name"), r.Name)...)
	case b.Service != nil:
		s, sp := b.Service, p.Child("service")
		if s.Name == "" {
			errs = append(errs, field.Required(sp.Child("name"), ""))
		} else {
			errs = append(errs, invalidEach(sp.Child("name"), s.Name, apivalidation.NameIsDNS1035Label(s.Name, false))...)
		}
		hasName, hasNumber := s.Port.Name != "", s.Port.Number != 0
		switch {
		case hasName && hasNumber:
			errs = append(errs, field.Invalid(p, "", "cannot set both port name & port number"))
		case hasName:
			errs = append(errs, invalidEach(sp.Child("port", "name"), s.Port.Name, validation.IsValidPortName(s.Port.Name))...)
		case hasNumber:
			errs = append(errs, invalidEach(sp.Child("port", "number"), s.Port.Number, validation.IsValidPortNum(int(s.Port.Number)))...)
		default:
			errs = append(errs, field.Required(p, "port name or number is required"))
		}
	default:
		errs = append(errs, field.Invalid(p, "", "resource or service backend is required"))
	}
	return errs
}

// pathSegment checks a required reference part (kind, name) that becomes
// a path segment.
func pathSegment(p *field.Path, v string) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	return invalidEach(p, v, content.IsPathSegmentName(v))
}

// validateIngressStatusUpdate checks what an ingress controller reports:
// load-balancer addresses, an IP already reported staying acceptable.
func validateIngressStatusUpdate(ing, old *networkingv1.Ingress) field.ErrorList {
	var errs field.ErrorList
	var oldIPs []string
	for _, in := range old.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			oldIPs = append(oldIPs, in.IP)
		}
	}
	p := field.NewPath("status", "loadBalancer", "ingress")
	for i, in := range ing.Status.LoadBalancer.Ingress {
		ip := p.Index(i)
		if in.IP != "" {
			errs = append(errs, validation.IsValidIPForLegacyField(ip.Child("ip"), in.IP, false, oldIPs)...)
		}
		if in.Hostname != "" {
			hp := ip.Child("hostname")
			errs = append(errs, invalidEach(hp, in.Hostname, validation.IsDNS1123Subdomain(in.Hostname))...)
			if netutils.ParseIPSloppy(in.Hostname) != nil {
				errs = append(errs, field.Invalid(hp, in.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return errs
}

func validateIngressClass(ic *networkingv1.IngressClass) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec")
	cp := p.Child("controller")
	if ic.Spec.Controller == "" {
		errs = append(errs, field.Required(cp, ""))
	} else {
		if len(ic.Spec.Controller) > maxLenIngressClassController {
			errs = append(errs, field.TooLong(cp, "", maxLenIngressClassController))
		}
		errs = append(errs, validation.IsDomainPrefixedPath(cp, ic.Spec.Controller)...)
	}
	if params := ic.Spec.Parameters; params != nil {
		pp := p.Child("parameters")
		if params.APIGroup != nil {
			errs = append(errs, invalidEach(pp.Child("apiGroup"), *params.APIGroup, validation.IsDNS1123Subdomain(*params.APIGroup))...)
		}
		errs = append(errs, pathSegment(pp.Child("kind"), params.Kind)...)
		errs = append(errs, pathSegment(pp.Child("name"), params.Name)...)
		errs = append(errs, validateParametersScope(params, pp)...)
	}
	return errs
}

func validateParametersScope(params *networkingv1.IngressClassParametersReference, p *field.Path) field.ErrorList {
	if params.Scope == nil {
		return field.ErrorList{field.Required(p.Child("scope"), "")}
	}
	switch *params.Scope {
	case networkingv1.IngressClassParametersReferenceScopeNamespace:
		if params.Namespace == nil {
			return field.ErrorList{field.Required(p.Child("namespace"), "`parameters.scope` is set to 'Namespace'")}
		}
		return invalidEach(p.Child("namespace"), *params.Namespace, apivalidation.ValidateNamespaceName(*params.Namespace, false))
	case networkingv1.IngressClassParametersReferenceScopeCluster:
		if params.Namespace != nil {
			return field.ErrorList{field.Forbidden(p.Child("namespace"), "`parameters.scope` is set to 'Cluster'")}
		}
		return nil
	}
	return field.ErrorList{field.NotSupported(p.Child("scope"), *params.Scope, parametersScopes)}
}

func validateIngressClassUpdate(ic, old *networkingv1.IngressClass) field.ErrorList {
	return apivalidation.ValidateImmutableField(ic.Spec.Controller, old.Spec.Controller, field.NewPath("spec", "controller"))
}

// networkPolicyOptions: an update may keep a pod selector with label
// values Kubernetes no longer accepts, and CIDRs the stored policy has.
type networkPolicyOptions struct {
	selector  metav1validation.LabelSelectorValidationOptions
	knownCIDR []string
}

func validateNetworkPolicy(np *networkingv1.NetworkPolicy) field.ErrorList {
	return validateNetworkPolicySpec(&np.Spec, networkPolicyOptions{})
}

// validateNetworkPolicyUpdate is the whole of an update's rules, with
// upstream's ValidationOptionsForNetworking and the stored CIDRs.
func validateNetworkPolicyUpdate(np, old *networkingv1.NetworkPolicy) field.ErrorList {
	var opts networkPolicyOptions
	if len(metav1validation.ValidateLabelSelector(&old.Spec.PodSelector, opts.selector, nil)) > 0 {
		opts.selector.AllowInvalidLabelValueInSelector = true
	}
	for _, peers := range networkPolicyPeers(&old.Spec) {
		for _, peer := range peers {
			if peer.IPBlock != nil {
				opts.knownCIDR = append(opts.knownCIDR, peer.IPBlock.CIDR)
				opts.knownCIDR = append(opts.knownCIDR, peer.IPBlock.Except...)
			}
		}
	}
	return validateNetworkPolicySpec(&np.Spec, opts)
}

// networkPolicyPeers lists the peers of every ingress and egress rule.
func networkPolicyPeers(s *networkingv1.NetworkPolicySpec) [][]networkingv1.NetworkPolicyPeer {
	var out [][]networkingv1.NetworkPolicyPeer
	for _, r := range s.Ingress {
		out = append(out, r.From)
	}
	for _, r := range s.Egress {
		out = append(out, r.To)
	}
	return out
}

func validateNetworkPolicySpec(s *networkingv1.NetworkPolicySpec, opts networkPolicyOptions) field.ErrorList {
	p := field.NewPath("spec")
	errs := metav1validation.ValidateLabelSelector(&s.PodSelector, opts.selector, p.Child("podSelector"))
	rules := func(name, peersName string, ports [][]networkingv1.NetworkPolicyPort, peers [][]networkingv1.NetworkPolicyPeer) {
		for i := range ports {
			rp := p.Child(name).Index(i)
			for j := range ports[i] {
				errs = append(errs, validateNetworkPolicyPort(&ports[i][j], rp.Child("ports").Index(j))...)
			}
			for j := range peers[i] {
				errs = append(errs, validateNetworkPolicyPeer(&peers[i][j], opts, rp.Child(peersName).Index(j))...)
			}
		}
	}
	var inPorts, outPorts [][]networkingv1.NetworkPolicyPort
	var inPeers, outPeers [][]networkingv1.NetworkPolicyPeer
	for _, r := range s.Ingress {
		inPorts, inPeers = append(inPorts, r.Ports), append(inPeers, r.From)
	}
	for _, r := range s.Egress {
		outPorts, outPeers = append(outPorts, r.Ports), append(outPeers, r.To)
	}
	rules("ingress", "from", inPorts, inPeers)
	rules("egress", "to", outPorts, outPeers)

	allowed := []string{string(networkingv1.PolicyTypeIngress), string(networkingv1.PolicyTypeEgress)}
	if len(s.PolicyTypes) > len(allowed) {
		return append(errs, field.Invalid(p.Child("policyTypes"), &s.PolicyTypes, "may not specify more than two policyTypes"))
	}
	for i, t := range s.PolicyTypes {
		if !slices.Contains(allowed, string(t)) {
			errs = append(errs, field.NotSupported(p.Child("policyTypes").Index(i), t, allowed))
		}
	}
	return errs
}

func validateNetworkPolicyPort(port *networkingv1.NetworkPolicyPort, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pr := port.Protocol; pr != nil && *pr != corev1.ProtocolTCP && *pr != corev1.ProtocolUDP && *pr != corev1.ProtocolSCTP {
		errs = append(errs, field.NotSupported(p.Child("protocol"), *pr, []string{string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP)}))
	}
	ep := p.Child("endPort")
	switch {
	case port.Port == nil:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(ep, *port.EndPort, "may not be specified when `port` is not specified"))
		}
	case port.Port.Type == intstr.Int:
		errs = append(errs, invalidEach(p.Child("port"), port.Port.IntVal, validation.IsValidPortNum(int(port.Port.IntVal)))...)
		if port.EndPort != nil {
			if *port.EndPort < port.Port.IntVal {
				errs = append(errs, field.Invalid(ep, *port.EndPort, "must be greater than or equal to `port`"))
			}
			errs = append(errs, invalidEach(ep, *port.EndPort, validation.IsValidPortNum(int(*port.EndPort)))...)
		}
	default:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(ep, *port.EndPort, "may not be specified when `port` is non-numeric"))
		}
		errs = append(errs, invalidEach(p.Child("port"), port.Port.StrVal, validation.IsValidPortName(port.Port.StrVal))...)
	}
	return errs
}

func validateNetworkPolicyPeer(peer *networkingv1.NetworkPolicyPeer, opts networkPolicyOptions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	if peer.PodSelector != nil {
		n++
		errs = append(errs, metav1validation.ValidateLabelSelector(peer.PodSelector, opts.selector, p.Child("podSelector"))...)
	}
	if peer.NamespaceSelector != nil {
		n++
		errs = append(errs, metav1validation.ValidateLabelSelector(peer.NamespaceSelector, opts.selector, p.Child("namespaceSelector"))...)
	}
	if peer.IPBlock != nil {
		n++
		errs = append(errs, validateIPBlock(peer.IPBlock, p.Child("ipBlock"), opts.knownCIDR)...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Required(p, "must specify a peer"))
	case n > 1 && peer.IPBlock != nil:
		errs = append(errs, field.Forbidden(p, "may not specify both ipBlock and another peer"))
	}
	return errs
}

// validateIPBlock: a valid cidr, and each except a strict subset of it.
func validateIPBlock(b *networkingv1.IPBlock, p *field.Path, known []string) field.ErrorList {
	if b.CIDR == "" {
		return field.ErrorList{field.Required(p.Child("cidr"), "")}
	}
	errs := validation.IsValidCIDRForLegacyField(p.Child("cidr"), b.CIDR, false, known)
	_, cidr, err := netutils.ParseCIDRSloppy(b.CIDR)
	if err != nil {
		return errs
	}
	cidrLen, _ := cidr.Mask.Size()
	for i, s := range b.Except {
		xp := p.Child("except").Index(i)
		errs = append(errs, validation.IsValidCIDRForLegacyField(xp, s, false, known)...)
		_, except, err := netutils.ParseCIDRSloppy(s)
		if err != nil {
			continue
		}
		exceptLen, _ := except.Mask.Size()
		if !cidr.Contains(except.IP) || cidrLen >= exceptLen {
			errs = append(errs, field.Invalid(xp, s, "must be a strict subset of `cidr`"))
		}
	}
	return errs
}
