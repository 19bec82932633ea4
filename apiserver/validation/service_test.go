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
		// v1.33 lets a LoadBalancer expose the kubelet's port 10250
		// (kubernetes#129174 dropped the old refusal).
		{name: "valid LoadBalancer on port 10250", obj: svcWith(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.Ports[0].Port = 10250
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
		// As v1.33: a client that sets clusterIPs must set clusterIP too;
		// the requested address was silently replaced by another.
		{name: "clusterIPs without clusterIP", obj: svcWith(func(s *corev1.Service) { s.Spec.ClusterIPs = []string{"10.43.0.77"} }),
			want: []want{{"spec.clusterIPs", invalid}}},
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

	// External IPs must be addresses a client outside can reach the
	// Service at, with v1.33's ValidateNonSpecialIP messages.
	for ip, msg := range map[string]string{
		"0.0.0.0":     "may not be unspecified (0.0.0.0)",
		"::":          "may not be unspecified (::)",
		"127.0.0.1":   "may not be in the loopback range (127.0.0.0/8, ::1/128)",
		"::1":         "may not be in the loopback range (127.0.0.0/8, ::1/128)",
		"169.254.1.1": "may not be in the link-local range (169.254.0.0/16, fe80::/10)",
		"fe80::1":     "may not be in the link-local range (169.254.0.0/16, fe80::/10)",
		"224.0.0.5":   "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
		"ff02::1":     "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
	} {
		errs := Validate(svcWith(func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"192.0.2.10", ip} }))
		if want := `spec.externalIPs[1]: Invalid value: "` + ip + `": ` + msg; len(errs) != 1 || errs[0].Error() != want {
			t.Errorf("externalIPs %s: got %v, want %q", ip, errs, want)
		}
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

	// A loopback external IP skiff stored before ValidateNonSpecialIP's
	// rule may be kept; a new one is refused.
	loopback := stored(svcWith(func(s *corev1.Service) { s.Spec.ClusterIP = "10.43.0.10"; s.Spec.ExternalIPs = []string{"127.0.0.1"} }))
	keepsIt := loopback.DeepCopy()
	keepsIt.Labels = map[string]string{"team": "a"}
	addsOne := loopback.DeepCopy()
	addsOne.Spec.ExternalIPs = append(addsOne.Spec.ExternalIPs, "127.0.0.2")
	runUpdate(t, []updateCase{
		{name: "stored loopback external IP kept", old: loopback, new: keepsIt},
		{name: "new loopback external IP refused", old: loopback, new: addsOne, want: []want{{"spec.externalIPs[1]", invalid}}},
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

// loadBalancer returns a valid LoadBalancer Service, changed by mutate.
func loadBalancer(mutate func(*corev1.Service)) *corev1.Service {
	return svcWith(func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		mutate(s)
	})
}

// v1.33's ValidateService rules for loadBalancerSourceRanges and its older
// annotation, with StrictIPCIDRValidation off: only on a LoadBalancer, and
// each a CIDR as ParseCIDRSloppy reads one (spaces around it allowed).
// loadBalancerIP is not judged.
func TestValidateLoadBalancerSourceRanges(t *testing.T) {
	const key = corev1.AnnotationLoadBalancerSourceRangesKey
	annotated := func(val string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Annotations = map[string]string{key: val} }
	}
	ranges := func(r ...string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = r }
	}
	const annPath = "metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]"
	runCreate(t, []testCase{
		{name: "CIDRs on a LoadBalancer", obj: loadBalancer(ranges("10.0.0.0/8", "2001:db8::/64"))},
		{name: "spaces around a CIDR", obj: loadBalancer(ranges(" 10.0.0.0/8 "))},
		{name: "lenient forms pass (warned about)", obj: loadBalancer(ranges("10.0.0.5/8", "010.000.000.000/8", "::ffff:1.2.3.0/120", "2001:DB8::/64"))},
		{name: "not a CIDR", obj: loadBalancer(ranges("10.0.0.0/8", "10.0.0.1", "example.com/8", "")),
			want: []want{{"spec.LoadBalancerSourceRanges[1]", invalid}, {"spec.LoadBalancerSourceRanges[2]", invalid}, {"spec.LoadBalancerSourceRanges[3]", invalid}}},
		{name: "on a ClusterIP Service", obj: svcWith(ranges("10.0.0.0/8")), want: []want{{"spec.LoadBalancerSourceRanges", forbidden}}},
		{name: "on a NodePort Service, not a CIDR", obj: svcWith(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort; ranges("x")(s) }),
			want: []want{{"spec.LoadBalancerSourceRanges", forbidden}, {"spec.LoadBalancerSourceRanges[0]", invalid}}},
		{name: "annotation on a LoadBalancer", obj: loadBalancer(annotated(" 10.0.0.0/8 , 192.168.0.0/16 "))},
		{name: "empty annotation", obj: loadBalancer(annotated("  "))},
		{name: "annotation not CIDRs", obj: loadBalancer(annotated("10.0.0.0/8,nope,")), want: []want{{annPath, invalid}, {annPath, invalid}}},
		{name: "annotation on a ClusterIP Service", obj: svcWith(annotated("10.0.0.0/8")), want: []want{{annPath, forbidden}}},
		{name: "the field wins over the annotation", obj: loadBalancer(func(s *corev1.Service) { ranges("10.0.0.0/8")(s); annotated("nope")(s) })},
		{name: "loadBalancerIP not judged", obj: svcWith(func(s *corev1.Service) { s.Spec.LoadBalancerIP = "not an address" })},
	})

	errs := Validate(svcWith(ranges("10.0.0.0/8")))
	if len(errs) != 1 || errs[0].Error() != "spec.LoadBalancerSourceRanges: Forbidden: may only be used when `type` is 'LoadBalancer'" {
		t.Fatalf("got %v", errs)
	}
	errs = Validate(loadBalancer(ranges(" 10.0.0.300/8")))
	if len(errs) != 1 || errs[0].Error() != `spec.LoadBalancerSourceRanges[0]: Invalid value: "10.0.0.300/8": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)` {
		t.Fatalf("got %v", errs)
	}
	errs = Validate(loadBalancer(annotated("10.0.0.0/8, 1.2.3.4")))
	if len(errs) != 1 || errs[0].Error() != annPath+`: Invalid value: "1.2.3.4": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)` {
		t.Fatalf("got %v", errs)
	}
}

// On update, as v1.33's ValidateServiceUpdate: CIDRs the stored Service
// already had, and an unchanged annotation, are not judged again; new ones
// are. The type rule holds on every update that changes the type or the
// values (a Service stored before these rules keeps what it holds).
func TestValidateLoadBalancerSourceRangesUpdate(t *testing.T) {
	const key = corev1.AnnotationLoadBalancerSourceRangesKey
	const annPath = "metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]"
	lb := stored(loadBalancer(func(s *corev1.Service) {
		s.Spec.ClusterIP = "10.43.0.10"
		s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", " bad "}
	}))
	relabelled := lb.DeepCopy()
	relabelled.Labels = map[string]string{"x": "y"}
	reordered := lb.DeepCopy()
	reordered.Spec.LoadBalancerSourceRanges = []string{"bad", "192.168.0.0/16", "10.0.0.0/8"}
	added := lb.DeepCopy()
	added.Spec.LoadBalancerSourceRanges = append(added.Spec.LoadBalancerSourceRanges, "worse")
	toClusterIP := lb.DeepCopy()
	toClusterIP.Spec.Type = corev1.ServiceTypeClusterIP
	toClusterIP.Spec.AllocateLoadBalancerNodePorts = nil
	for i := range toClusterIP.Spec.Ports {
		toClusterIP.Spec.Ports[i].NodePort = 0
	}
	toClusterIP.Spec.ExternalTrafficPolicy = ""

	clusterIP := stored(svcWith(func(s *corev1.Service) {
		s.Spec.ClusterIP = "10.43.0.11"
		s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}
	}))
	clusterIPRelabelled := clusterIP.DeepCopy()
	clusterIPRelabelled.Labels = map[string]string{"x": "y"}
	clusterIPMore := clusterIP.DeepCopy()
	clusterIPMore.Spec.LoadBalancerSourceRanges = append(clusterIPMore.Spec.LoadBalancerSourceRanges, "192.168.0.0/16")

	annotated := stored(loadBalancer(func(s *corev1.Service) {
		s.Spec.ClusterIP = "10.43.0.12"
		s.Annotations = map[string]string{key: "10.0.0.0/8,bad"}
	}))
	annRelabelled := annotated.DeepCopy()
	annRelabelled.Labels = map[string]string{"x": "y"}
	annChanged := annotated.DeepCopy()
	annChanged.Annotations[key] = "10.0.0.0/8,bad,192.168.0.0/16"

	runUpdate(t, []updateCase{
		{name: "stored invalid CIDR kept", old: lb, new: relabelled},
		{name: "stored invalid CIDR moved, a valid one added", old: lb, new: reordered},
		{name: "new invalid CIDR refused", old: lb, new: added, want: []want{{"spec.LoadBalancerSourceRanges[2]", invalid}}},
		{name: "type changed away from LoadBalancer with the ranges", old: lb, new: toClusterIP, want: []want{{"spec.LoadBalancerSourceRanges", forbidden}}},
		{name: "stored ranges on a ClusterIP Service kept", old: clusterIP, new: clusterIPRelabelled},
		{name: "ranges changed on a ClusterIP Service", old: clusterIP, new: clusterIPMore, want: []want{{"spec.LoadBalancerSourceRanges", forbidden}}},
		{name: "unchanged annotation kept", old: annotated, new: annRelabelled},
		{name: "changed annotation judged whole", old: annotated, new: annChanged, want: []want{{annPath, invalid}}},
	})
}

// TestValidateServiceLoadBalancerFields: as v1.33's ValidateService,
// loadBalancerClass and allocateLoadBalancerNodePorts belong to
// LoadBalancer Services only, the class is a qualified name, and a
// LoadBalancer's class may not change (the controller that provisioned its
// load balancer would lose it). Stored Services that hold them otherwise
// may still be written while these fields stay as they are.
func TestValidateServiceLoadBalancerFields(t *testing.T) {
	lb := func(mutate func(*corev1.Service)) *corev1.Service {
		return svcWith(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer; mutate(s) })
	}
	runCreate(t, []testCase{
		{name: "LoadBalancer with a class", obj: lb(func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/lb") })},
		{name: "class not a qualified name", obj: lb(func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("not a name!") }),
			want: []want{{"spec.loadBalancerClass", invalid}}},
		{name: "class on a ClusterIP Service", obj: svcWith(func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/lb") }),
			want: []want{{"spec.loadBalancerClass", forbidden}}},
		{name: "allocateLoadBalancerNodePorts on a NodePort Service", obj: svcWith(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.AllocateLoadBalancerNodePorts = ptr.To(false)
		}), want: []want{{"spec.allocateLoadBalancerNodePorts", forbidden}}},
	})

	old := stored(lb(func(s *corev1.Service) {
		s.Spec.ClusterIP = "10.43.0.10"
		s.Spec.LoadBalancerClass = ptr.To("example.com/a")
	}))
	reclassed := old.DeepCopy()
	reclassed.Spec.LoadBalancerClass = ptr.To("example.com/b")
	unclassed := old.DeepCopy()
	unclassed.Spec.LoadBalancerClass = nil
	relabelled := old.DeepCopy()
	relabelled.Labels = map[string]string{"team": "a"}
	// A Service that becomes a LoadBalancer may get any class.
	plain := stored(svcWith(func(s *corev1.Service) { s.Spec.ClusterIP = "10.43.0.10" }))
	toLB := plain.DeepCopy()
	toLB.Spec.Type = corev1.ServiceTypeLoadBalancer
	toLB.Spec.AllocateLoadBalancerNodePorts = ptr.To(true)
	toLB.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	toLB.Spec.LoadBalancerClass = ptr.To("example.com/b")
	classedPlain := plain.DeepCopy()
	classedPlain.Spec.LoadBalancerClass = ptr.To("example.com/b")
	// Stored before the rule: a ClusterIP Service holding a class.
	legacy := stored(svcWith(func(s *corev1.Service) {
		s.Spec.ClusterIP = "10.43.0.10"
		s.Spec.LoadBalancerClass = ptr.To("example.com/a")
	}))
	legacyRelabelled := legacy.DeepCopy()
	legacyRelabelled.Labels = map[string]string{"team": "a"}
	runUpdate(t, []updateCase{
		{name: "class changed", old: old, new: reclassed, want: []want{{"spec.loadBalancerClass", invalid}}},
		{name: "class removed", old: old, new: unclassed, want: []want{{"spec.loadBalancerClass", invalid}}},
		{name: "class kept", old: old, new: relabelled},
		{name: "class set on becoming a LoadBalancer", old: plain, new: toLB},
		{name: "class set on a ClusterIP Service", old: plain, new: classedPlain, want: []want{{"spec.loadBalancerClass", forbidden}}},
		{name: "stored class on a ClusterIP Service kept", old: legacy, new: legacyRelabelled},
	})
}

// TestValidateExternalNameFamilies: as v1.33, an ExternalName Service has
// no IP families; an update that keeps a stored one's is let through.
func TestValidateExternalNameFamilies(t *testing.T) {
	ext := func(mutate func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}}
		mutate(s)
		return defaulted(s)
	}
	runCreate(t, []testCase{
		{name: "ipFamilyPolicy", obj: ext(func(s *corev1.Service) { s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack) }),
			want: []want{{"spec.ipFamilyPolicy", forbidden}}},
		{name: "ipFamilies", obj: ext(func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol} }),
			want: []want{{"spec.ipFamilies", forbidden}}},
	})
	legacy := stored(ext(func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol} }))
	relabelled := legacy.DeepCopy()
	relabelled.Labels = map[string]string{"team": "a"}
	plain := stored(ext(func(*corev1.Service) {}))
	withPolicy := plain.DeepCopy()
	withPolicy.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
	runUpdate(t, []updateCase{
		{name: "stored families kept", old: legacy, new: relabelled},
		{name: "policy added", old: plain, new: withPolicy, want: []want{{"spec.ipFamilyPolicy", forbidden}}},
	})
}
