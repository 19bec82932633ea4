package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/apiserver/defaulting"
)

func svcWith(mutate func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}
	mutate(s)
	return defaulted(s)
}

func TestValidateService(t *testing.T) {
	runCreate(t, []testCase{
		{name: "valid", obj: svcWith(func(*corev1.Service) {})},
		{name: "valid headless without ports", obj: svcWith(func(s *corev1.Service) { s.Spec.ClusterIP = "None"; s.Spec.Ports = nil })},
		{name: "valid NodePort in range", obj: svcWith(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort; s.Spec.Ports[0].NodePort = 30080 })},
		{name: "valid ExternalName", obj: svcWith(func(s *corev1.Service) {
			s.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}
		})},
		{name: "valid IPv6 clusterIP gets the IPv6 family", obj: svcWith(func(s *corev1.Service) { s.Spec.ClusterIP = "fd00:10:43::10" })},
		{name: "clusterIP of the wrong family", obj: svcWith(func(s *corev1.Service) {
			s.Spec.ClusterIP = "fd00:10:43::10"
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		}), want: []want{{"spec.clusterIPs[0]", invalid}}},
		{name: "name must start with a letter", obj: svcWith(func(s *corev1.Service) { s.Name = "1web" }), want: []want{{"metadata.name", invalid}}},
		{name: "ports required", obj: svcWith(func(s *corev1.Service) { s.Spec.Ports = nil }), want: []want{{"spec.ports", required}}},
		{name: "port out of range", obj: svcWith(func(s *corev1.Service) { s.Spec.Ports[0].Port = 0 }), want: []want{{"spec.ports[0].port", invalid}}},
		{name: "names required with several ports", obj: svcWith(func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: 443})
		}), want: []want{{"spec.ports[1].name", required}}},
		{name: "duplicate port", obj: svcWith(func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "alt", Port: 80})
		}), want: []want{{"spec.ports[1]", duplicate}}},
		{name: "nodePort on ClusterIP", obj: svcWith(func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30080 }),
			want: []want{{"spec.ports[0].nodePort", forbidden}}},
		{name: "nodePort out of range", obj: svcWith(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort; s.Spec.Ports[0].NodePort = 80 }),
			want: []want{{"spec.ports[0].nodePort", invalid}}},
		{name: "bad type", obj: svcWith(func(s *corev1.Service) { s.Spec.Type = "Magic" }), want: []want{{"spec.type", notSupported}}},
		{name: "bad clusterIP", obj: svcWith(func(s *corev1.Service) { s.Spec.ClusterIP = "10.0.0.300" }),
			want: []want{{"spec.clusterIPs[0]", invalid}}},
		{name: "headless NodePort", obj: svcWith(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort; s.Spec.ClusterIP = "None" }),
			want: []want{{"spec.clusterIPs[0]", invalid}}},
		{name: "bad selector label", obj: svcWith(func(s *corev1.Service) { s.Spec.Selector["app"] = "not valid!" }),
			want: []want{{"spec.selector", invalid}}},
		{name: "bad targetPort name", obj: svcWith(func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("Not_A_Name") }),
			want: []want{{"spec.ports[0].targetPort", invalid}}},
		{name: "ExternalName needs a name", obj: svcWith(func(s *corev1.Service) {
			s.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName}
		}), want: []want{{"spec.externalName", required}}},
		{name: "trafficDistribution PreferClose", obj: svcWith(func(s *corev1.Service) {
			s.Spec.TrafficDistribution = ptr.To(corev1.ServiceTrafficDistributionPreferClose)
		})},
		// PreferSameZone and PreferSameNode need v1.33's alpha PreferSameTrafficDistribution gate, off.
		{name: "trafficDistribution PreferSameZone", obj: svcWith(func(s *corev1.Service) {
			s.Spec.TrafficDistribution = ptr.To(corev1.ServiceTrafficDistributionPreferSameZone)
		}),
			want: []want{{"spec.trafficDistribution", notSupported}}},
		{name: "trafficDistribution unknown", obj: svcWith(func(s *corev1.Service) { s.Spec.TrafficDistribution = ptr.To("Nearby") }),
			want: []want{{"spec.trafficDistribution", notSupported}}},
		{name: "topology annotations agree", obj: svcWith(func(s *corev1.Service) {
			s.Annotations = map[string]string{corev1.AnnotationTopologyMode: "Auto", corev1.DeprecatedAnnotationTopologyAwareHints: "Auto"}
		})},
		{name: "topology annotations differ", obj: svcWith(func(s *corev1.Service) {
			s.Annotations = map[string]string{corev1.AnnotationTopologyMode: "Auto", corev1.DeprecatedAnnotationTopologyAwareHints: "Disabled"}
		}), want: []want{{"metadata.annotations[service.kubernetes.io/topology-mode]", invalid}}},
	})

	errs := Validate(svcWith(func(s *corev1.Service) { s.Spec.TrafficDistribution = ptr.To("PreferSameNode") }))
	if len(errs) != 1 || errs[0].Error() != `spec.trafficDistribution: Unsupported value: "PreferSameNode": supported values: "PreferClose"` {
		t.Fatalf("got %v", errs)
	}
	errs = Validate(svcWith(func(s *corev1.Service) {
		s.Annotations = map[string]string{corev1.AnnotationTopologyMode: "Auto", corev1.DeprecatedAnnotationTopologyAwareHints: "auto"}
	}))
	if len(errs) != 1 || errs[0].Error() != `metadata.annotations[service.kubernetes.io/topology-mode]: Invalid value: "Auto": must match annotations[service.kubernetes.io/topology-aware-hints] when both are specified` {
		t.Fatalf("got %v", errs)
	}

	errs = Validate(svcWith(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort; s.Spec.Ports[0].NodePort = 80 }))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "The range of valid ports is 30000-32767") {
		t.Fatalf("got %v", errs)
	}
}

func TestValidateServiceUpdate(t *testing.T) {
	old := stored(svcWith(func(s *corev1.Service) { s.Spec.ClusterIP = "10.43.0.10" }))
	moved := old.DeepCopy()
	moved.Spec.ClusterIP = "10.43.0.11"
	moved.Spec.ClusterIPs = []string{"10.43.0.11"}
	relabelled := old.DeepCopy()
	relabelled.Spec.Selector = map[string]string{"app": "web2"}
	toExternal := old.DeepCopy()
	toExternal.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "x.example.com", SessionAffinity: corev1.ServiceAffinityNone}
	runUpdate(t, []updateCase{
		{name: "selector may change", old: old, new: relabelled},
		{name: "clusterIP immutable", old: old, new: moved, want: []want{{"spec.clusterIPs[0]", invalid}}},
		{name: "switch to ExternalName drops the IP", old: old, new: toExternal},
	})

	// Services stored before these rules keep what they hold: a write that
	// leaves it alone (a label, a finalizer) is not refused for it.
	sameZone := stored(svcWith(func(s *corev1.Service) {
		s.Spec.ClusterIP = "10.43.0.10"
		s.Spec.TrafficDistribution = ptr.To(corev1.ServiceTrafficDistributionPreferSameZone)
		s.Annotations = map[string]string{corev1.AnnotationTopologyMode: "Auto", corev1.DeprecatedAnnotationTopologyAwareHints: "Disabled"}
	}))
	finalized := sameZone.DeepCopy()
	finalized.Finalizers = []string{"example.com/keep"}
	toNode := sameZone.DeepCopy()
	toNode.Spec.TrafficDistribution = ptr.To(corev1.ServiceTrafficDistributionPreferSameNode)
	reannotated := sameZone.DeepCopy()
	reannotated.Annotations[corev1.AnnotationTopologyMode] = "auto"
	fixed := sameZone.DeepCopy()
	fixed.Spec.TrafficDistribution = ptr.To(corev1.ServiceTrafficDistributionPreferClose)
	delete(fixed.Annotations, corev1.DeprecatedAnnotationTopologyAwareHints)
	toBad := old.DeepCopy()
	toBad.Spec.TrafficDistribution = ptr.To("Nearby")
	runUpdate(t, []updateCase{
		{name: "stored trafficDistribution and annotations kept", old: sameZone, new: finalized},
		{name: "trafficDistribution changed to another unsupported value", old: sameZone, new: toNode, want: []want{{"spec.trafficDistribution", notSupported}}},
		{name: "topology annotation changed still disagreeing", old: sameZone, new: reannotated,
			want: []want{{"metadata.annotations[service.kubernetes.io/topology-mode]", invalid}}},
		{name: "both mended", old: sameZone, new: fixed},
		{name: "unsupported trafficDistribution set by an update", old: old, new: toBad, want: []want{{"spec.trafficDistribution", notSupported}}},
	})
}

// A replace that omits the allocated cluster IP is a change of it here; the
// Service registry carries the allocations over before validation
// (services.Lifecycle.PrepareUpdate, tested in apiserver's Service tests).
func TestServiceReplaceWithoutClusterIP(t *testing.T) {
	old := stored(svcWith(func(s *corev1.Service) { s.Spec.ClusterIP = "10.43.0.10" }))
	replacement := &corev1.Service{
		ObjectMeta: *old.ObjectMeta.DeepCopy(),
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
	}
	bare := replacement.DeepCopy()
	defaulting.Default(bare)
	expectErrors(t, ValidateUpdate(bare, old), []want{{"spec.clusterIPs[0]", invalid}})
}
