package defaulting

import (
	"net"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DefaultClientIPTimeoutSeconds is Kubernetes' session affinity timeout (3 hours).
const DefaultClientIPTimeoutSeconds int32 = corev1.DefaultClientIPServiceAffinitySeconds

func defaultService(svc *corev1.Service) {
	s := &svc.Spec
	if s.SessionAffinity == "" {
		s.SessionAffinity = corev1.ServiceAffinityNone
	}
	if s.SessionAffinity == corev1.ServiceAffinityNone {
		s.SessionAffinityConfig = nil
	}
	if s.SessionAffinity == corev1.ServiceAffinityClientIP {
		if s.SessionAffinityConfig == nil || s.SessionAffinityConfig.ClientIP == nil || s.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil {
			s.SessionAffinityConfig = &corev1.SessionAffinityConfig{
				ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptrTo(DefaultClientIPTimeoutSeconds)},
			}
		}
	}
	if s.Type == "" {
		s.Type = corev1.ServiceTypeClusterIP
	}
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if targetPortUnset(p.TargetPort) {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if (s.Type == corev1.ServiceTypeNodePort || s.Type == corev1.ServiceTypeLoadBalancer) && s.ExternalTrafficPolicy == "" {
		s.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if s.Type != corev1.ServiceTypeExternalName {
		if s.InternalTrafficPolicy == nil {
			s.InternalTrafficPolicy = ptrTo(corev1.ServiceInternalTrafficPolicyCluster)
		}
		// Kubernetes' service registry settles the IP family when it allocates
		// the cluster IP; skiff's clusters are single-stack IPv4, so the
		// outcome is always SingleStack/IPv4 unless the user asked otherwise.
		if s.IPFamilyPolicy == nil {
			s.IPFamilyPolicy = ptrTo(corev1.IPFamilyPolicySingleStack)
		}
		if len(s.IPFamilies) == 0 {
			s.IPFamilies = []corev1.IPFamily{familyOf(s.ClusterIP, s.ClusterIPs)}
		}
	}
	if s.Type == corev1.ServiceTypeLoadBalancer && s.AllocateLoadBalancerNodePorts == nil {
		s.AllocateLoadBalancerNodePorts = ptrTo(true)
	}
	// clusterIPs mirrors clusterIP when only the singular field was given.
	if s.ClusterIP != "" && len(s.ClusterIPs) == 0 {
		s.ClusterIPs = []string{s.ClusterIP}
	}
}

func defaultEndpoints(ep *corev1.Endpoints) {
	for i := range ep.Subsets {
		for j := range ep.Subsets[i].Ports {
			if ep.Subsets[i].Ports[j].Protocol == "" {
				ep.Subsets[i].Ports[j].Protocol = corev1.ProtocolTCP
			}
		}
	}
}

func defaultSecret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	// stringData is a write-only convenience: Kubernetes folds it into data
	// (stringData wins on a shared key) while decoding, so it is never stored
	// or returned. skiff stores v1 objects as sent, so the fold happens here.
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = make(map[string][]byte, len(s.StringData))
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	}
}

func defaultNamespace(ns *corev1.Namespace) {
	// Every namespace carries its own name as a label so that namespace
	// selectors (NetworkPolicy, webhooks) can pick it by name.
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
}

func defaultNode(n *corev1.Node) {
	// A node that reports only capacity can allocate all of it.
	if len(n.Status.Allocatable) == 0 && len(n.Status.Capacity) > 0 {
		n.Status.Allocatable = n.Status.Capacity.DeepCopy()
	}
	defaultResourceList(n.Status.Capacity)
	defaultResourceList(n.Status.Allocatable)
	// Kubernetes stores only podCIDRs and shows its first as podCIDR; a
	// client setting either gets both, and where they differ podCIDR wins,
	// as older clients know only it.
	switch {
	case n.Spec.PodCIDR != "" && (len(n.Spec.PodCIDRs) == 0 || n.Spec.PodCIDRs[0] != n.Spec.PodCIDR):
		n.Spec.PodCIDRs = []string{n.Spec.PodCIDR}
	case n.Spec.PodCIDR == "" && len(n.Spec.PodCIDRs) > 0:
		n.Spec.PodCIDR = n.Spec.PodCIDRs[0]
	}
}

func defaultLimitRange(lr *corev1.LimitRange) {
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		defaultResourceList(item.Max)
		defaultResourceList(item.Min)
		defaultResourceList(item.Default)
		defaultResourceList(item.DefaultRequest)
		defaultResourceList(item.MaxLimitRequestRatio)
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		// For containers a maximum is also the default limit, and the default
		// limit (else the minimum) is also the default request.
		if item.Default == nil {
			item.Default = corev1.ResourceList{}
		}
		for name, q := range item.Max {
			if _, ok := item.Default[name]; !ok {
				item.Default[name] = q.DeepCopy()
			}
		}
		if item.DefaultRequest == nil {
			item.DefaultRequest = corev1.ResourceList{}
		}
		for name, q := range item.Default {
			if _, ok := item.DefaultRequest[name]; !ok {
				item.DefaultRequest[name] = q.DeepCopy()
			}
		}
		for name, q := range item.Min {
			if _, ok := item.DefaultRequest[name]; !ok {
				item.DefaultRequest[name] = q.DeepCopy()
			}
		}
	}
}

func defaultReplicationController(rc *corev1.ReplicationController) {
	if rc.Spec.Template != nil {
		// An RC without a selector selects its template's labels.
		if len(rc.Spec.Selector) == 0 && len(rc.Spec.Template.Labels) > 0 {
			rc.Spec.Selector = map[string]string{}
			for k, v := range rc.Spec.Template.Labels {
				rc.Spec.Selector[k] = v
			}
		}
		if len(rc.Labels) == 0 && len(rc.Spec.Template.Labels) > 0 {
			rc.Labels = map[string]string{}
			for k, v := range rc.Spec.Template.Labels {
				rc.Labels[k] = v
			}
		}
		defaultPodTemplateSpec(rc.Spec.Template)
	}
	if rc.Spec.Replicas == nil {
		rc.Spec.Replicas = ptrTo(int32(1))
	}
}

func defaultRoleRef(r *rbacv1.RoleRef) {
	if r.APIGroup == "" {
		r.APIGroup = rbacv1.GroupName
	}
}

// defaultSubjects gives User and Group subjects the RBAC API group, which is
// the only group those kinds can belong to; ServiceAccount subjects stay in
// the core group.
func defaultSubjects(subjects []rbacv1.Subject) {
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup != "" {
			continue
		}
		switch s.Kind {
		case rbacv1.UserKind, rbacv1.GroupKind:
			s.APIGroup = rbacv1.GroupName
		}
	}
}

func defaultPriorityClass(pc *schedulingv1.PriorityClass) {
	if pc.PreemptionPolicy == nil {
		pc.PreemptionPolicy = ptrTo(corev1.PreemptLowerPriority)
	}
}

func defaultEndpointSlice(es *discoveryv1.EndpointSlice) {
	for i := range es.Ports {
		if es.Ports[i].Name == nil {
			es.Ports[i].Name = ptrTo("")
		}
		if es.Ports[i].Protocol == nil {
			es.Ports[i].Protocol = ptrTo(corev1.ProtocolTCP)
		}
	}
}

// familyOf is the IP family of a requested cluster IP: IPv6 when the user
// asked for an IPv6 address, IPv4 otherwise (none requested, or headless).
func familyOf(clusterIP string, clusterIPs []string) corev1.IPFamily {
	ip := clusterIP
	if len(clusterIPs) > 0 {
		ip = clusterIPs[0]
	}
	if parsed := net.ParseIP(ip); parsed != nil && parsed.To4() == nil {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}
