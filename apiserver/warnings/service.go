package warnings

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// service returns a Service's warnings, as v1.33's GetWarningsForService
// (pkg/api/service/warnings.go), which its strategy gives on every create
// and update: the deprecated topology-aware-hints annotation, addresses and
// prefixes in a form v1.33 accepts but means to refuse, and fields the
// Service's type ignores. (The warnings about headless Services and about
// trafficDistribution PreferClose came after v1.33.)
func service(s *corev1.Service) []string {
	var w []string
	if _, ok := s.Annotations[corev1.DeprecatedAnnotationTopologyAwareHints]; ok {
		w = append(w, fmt.Sprintf("annotation %s is deprecated, please use %s instead", corev1.DeprecatedAnnotationTopologyAwareHints, corev1.AnnotationTopologyMode))
	}
	spec := field.NewPath("spec")
	// Only a Service with a cluster IP (not headless, not ExternalName)
	// has its cluster IPs looked at.
	if s.Spec.ClusterIP != "" && s.Spec.ClusterIP != corev1.ClusterIPNone {
		for i, ip := range s.Spec.ClusterIPs {
			w = append(w, ipWarnings(spec.Child("clusterIPs").Index(i), ip)...)
		}
	}
	for i, ip := range s.Spec.ExternalIPs {
		w = append(w, ipWarnings(spec.Child("externalIPs").Index(i), ip)...)
	}
	if s.Spec.LoadBalancerIP != "" {
		w = append(w, ipWarnings(spec.Child("loadBalancerIP"), s.Spec.LoadBalancerIP)...)
	}
	for i, cidr := range s.Spec.LoadBalancerSourceRanges {
		w = append(w, cidrWarnings(spec.Child("loadBalancerSourceRanges").Index(i), cidr)...)
	}
	if s.Spec.Type == corev1.ServiceTypeExternalName && len(s.Spec.ExternalIPs) > 0 {
		w = append(w, fmt.Sprintf("spec.externalIPs is ignored when spec.type is %q", corev1.ServiceTypeExternalName))
	}
	if s.Spec.Type != corev1.ServiceTypeExternalName && s.Spec.ExternalName != "" {
		w = append(w, fmt.Sprintf("spec.externalName is ignored when spec.type is not %q", corev1.ServiceTypeExternalName))
	}
	return w
}
