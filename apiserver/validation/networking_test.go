package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func ingress(mutate func(*networkingv1.Ingress)) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			Host: "shop.example.com",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}},
			}}}},
		}}},
	}
	if mutate != nil {
		mutate(ing)
	}
	return ing
}

func firstPath(ing *networkingv1.Ingress) *networkingv1.HTTPIngressPath {
	return &ing.Spec.Rules[0].HTTP.Paths[0]
}

func networkPolicy(mutate func(*networkingv1.NetworkPolicySpec)) *networkingv1.NetworkPolicy {
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "deny", Namespace: "default", ResourceVersion: "1"}}
	if mutate != nil {
		mutate(&np.Spec)
	}
	return defaulted(np)
}

func ingressClass(mutate func(*networkingv1.IngressClassSpec)) *networkingv1.IngressClass {
	ic := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx", ResourceVersion: "1"}, Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}}
	if mutate != nil {
		mutate(&ic.Spec)
	}
	return defaulted(ic)
}

func fromPeer(peer networkingv1.NetworkPolicyPeer) func(*networkingv1.NetworkPolicySpec) {
	return func(s *networkingv1.NetworkPolicySpec) {
		s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{peer}}}
	}
}

func withPort(port networkingv1.NetworkPolicyPort) func(*networkingv1.NetworkPolicySpec) {
	return func(s *networkingv1.NetworkPolicySpec) {
		s.Egress = []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{port}}}
	}
}

func withParameters(p networkingv1.IngressClassParametersReference) func(*networkingv1.IngressClassSpec) {
	return func(s *networkingv1.IngressClassSpec) { s.Parameters = &p }
}

// The networking.k8s.io/v1 rules give kube-apiserver v1.33's messages at
// its field paths (pkg/apis/networking/validation).
func TestNetworkingMessages(t *testing.T) {
	cases := []struct {
		name string
		obj  runtime.Object
		want []string // each error's Error(); nil: valid
	}{
		{"valid ingress", ingress(nil), nil},
		{"no rules and no default backend", ingress(func(i *networkingv1.Ingress) { i.Spec.Rules = nil }),
			[]string{"spec: Invalid value: null: either `defaultBackend` or `rules` must be specified"}},
		{"unknown pathType", ingress(func(i *networkingv1.Ingress) { firstPath(i).PathType = ptr.To(networkingv1.PathType("Regex")) }),
			[]string{`spec.rules[0].http.paths[0].pathType: Unsupported value: "Regex": supported values: "Exact", "ImplementationSpecific", "Prefix"`}},
		{"missing pathType", ingress(func(i *networkingv1.Ingress) { firstPath(i).PathType = nil }),
			[]string{"spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"}},
		{"Prefix path not absolute", ingress(func(i *networkingv1.Ingress) { firstPath(i).Path = "shop" }),
			[]string{`spec.rules[0].http.paths[0].path: Invalid value: "shop": must be an absolute path`}},
		{"Exact path with a dot segment", ingress(func(i *networkingv1.Ingress) { firstPath(i).Path = "/a/../b" }),
			[]string{`spec.rules[0].http.paths[0].path: Invalid value: "/a/../b": must not contain '/../'`}},
		{"ImplementationSpecific may be empty", ingress(func(i *networkingv1.Ingress) {
			firstPath(i).PathType, firstPath(i).Path = ptr.To(networkingv1.PathTypeImplementationSpecific), ""
		}), nil},
		{"service and resource backend", ingress(func(i *networkingv1.Ingress) {
			firstPath(i).Backend.Resource = &corev1.TypedLocalObjectReference{Kind: "Bucket", Name: "static"}
		}), []string{`spec.rules[0].http.paths[0].backend: Invalid value: "": cannot set both resource and service backends`}},
		{"no backend", ingress(func(i *networkingv1.Ingress) { firstPath(i).Backend.Service = nil }),
			[]string{`spec.rules[0].http.paths[0].backend: Invalid value: "": resource or service backend is required`}},
		{"port name and number", ingress(func(i *networkingv1.Ingress) { firstPath(i).Backend.Service.Port.Name = "http" }),
			[]string{`spec.rules[0].http.paths[0].backend: Invalid value: "": cannot set both port name & port number`}},
		{"no port", ingress(func(i *networkingv1.Ingress) { firstPath(i).Backend.Service.Port.Number = 0 }),
			[]string{`spec.rules[0].http.paths[0].backend: Required value: port name or number is required`}},
		{"service name not a DNS-1035 label", ingress(func(i *networkingv1.Ingress) { firstPath(i).Backend.Service.Name = "1web" }),
			[]string{`spec.rules[0].http.paths[0].backend.service.name: Invalid value: "1web": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`}},
		{"host wildcard not leading", ingress(func(i *networkingv1.Ingress) { i.Spec.Rules[0].Host = "shop.*.example.com" }),
			[]string{`spec.rules[0].host: Invalid value: "shop.*.example.com": a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		{"wildcard host", ingress(func(i *networkingv1.Ingress) { i.Spec.Rules[0].Host = "*.example.com" }), nil},
		{"IP host", ingress(func(i *networkingv1.Ingress) { i.Spec.Rules[0].Host = "10.0.0.1" }),
			[]string{`spec.rules[0].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address`}},
		{"class annotation disagrees", ingress(func(i *networkingv1.Ingress) {
			i.Annotations = map[string]string{"kubernetes.io/ingress.class": "nginx"}
			i.Spec.IngressClassName = ptr.To("traefik")
		}), []string{"annotations.kubernetes.io/ingress.class: Invalid value: \"nginx\": must match `ingressClassName` when both are specified"}},
		{"bad TLS secret name", ingress(func(i *networkingv1.Ingress) {
			i.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"shop.example.com"}, SecretName: "Web_TLS"}}
		}), []string{`spec.tls[0].secretName: Invalid value: "Web_TLS": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},

		{"default deny", networkPolicy(nil), nil},
		{"endPort below port", networkPolicy(withPort(networkingv1.NetworkPolicyPort{Port: ptr.To(intstr.FromInt32(8080)), EndPort: ptr.To[int32](80)})),
			[]string{"spec.egress[0].ports[0].endPort: Invalid value: 80: must be greater than or equal to `port`"}},
		{"endPort with a named port", networkPolicy(withPort(networkingv1.NetworkPolicyPort{Port: ptr.To(intstr.FromString("http")), EndPort: ptr.To[int32](90)})),
			[]string{"spec.egress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is non-numeric"}},
		{"unknown protocol", networkPolicy(withPort(networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.Protocol("ICMP"))})),
			[]string{`spec.egress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"`}},
		{"except outside cidr", networkPolicy(fromPeer(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/16", Except: []string{"10.1.0.0/24", "10.0.0.0/16"}}})),
			[]string{
				"spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: \"10.1.0.0/24\": must be a strict subset of `cidr`",
				"spec.ingress[0].from[0].ipBlock.except[1]: Invalid value: \"10.0.0.0/16\": must be a strict subset of `cidr`",
			}},
		{"bad cidr", networkPolicy(fromPeer(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/33"}})),
			[]string{`spec.ingress[0].from[0].ipBlock.cidr: Invalid value: "10.0.0.0/33": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)`}},
		{"cidr with host bits, accepted as in v1.33", networkPolicy(fromPeer(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.1/16"}})), nil},
		{"empty peer", networkPolicy(fromPeer(networkingv1.NetworkPolicyPeer{})),
			[]string{"spec.ingress[0].from[0]: Required value: must specify a peer"}},
		{"ipBlock and a selector", networkPolicy(fromPeer(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}, PodSelector: &metav1.LabelSelector{}})),
			[]string{"spec.ingress[0].from[0]: Forbidden: may not specify both ipBlock and another peer"}},
		{"unknown policyType", networkPolicy(func(s *networkingv1.NetworkPolicySpec) { s.PolicyTypes = []networkingv1.PolicyType{"Both"} }),
			[]string{`spec.policyTypes[0]: Unsupported value: "Both": supported values: "Ingress", "Egress"`}},

		{"valid class", ingressClass(nil), nil},
		{"controller not domain-prefixed", ingressClass(func(s *networkingv1.IngressClassSpec) { s.Controller = "nginx" }),
			[]string{`spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")`}},
		{"no controller", ingressClass(func(s *networkingv1.IngressClassSpec) { s.Controller = "" }),
			[]string{"spec.controller: Required value"}},
		{"namespace scope without a namespace", ingressClass(withParameters(networkingv1.IngressClassParametersReference{
			Kind: "Config", Name: "c", Scope: ptr.To(networkingv1.IngressClassParametersReferenceScopeNamespace)})),
			[]string{"spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'"}},
		{"cluster scope with a namespace", ingressClass(withParameters(networkingv1.IngressClassParametersReference{
			Kind: "Config", Name: "c", Scope: ptr.To(networkingv1.IngressClassParametersReferenceScopeCluster), Namespace: ptr.To("default")})),
			[]string{"spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'"}},
		{"unknown scope", ingressClass(withParameters(networkingv1.IngressClassParametersReference{Kind: "Config", Name: "c", Scope: ptr.To("Node")})),
			[]string{`spec.parameters.scope: Unsupported value: "Node": supported values: "Cluster", "Namespace"`}},
		{"parameters kind with a slash", ingressClass(withParameters(networkingv1.IngressClassParametersReference{Kind: "a/b", Name: "c"})),
			[]string{`spec.parameters.kind: Invalid value: "a/b": may not contain '/'`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range Validate(tc.obj) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors\n %s\nwant\n %s", strings.Join(got, "\n "), strings.Join(tc.want, "\n "))
			}
		})
	}
}

// Updates keep what the stored object has: a CIDR Kubernetes no longer
// accepts, a TLS secret name of old; an IngressClass's controller is
// immutable.
func TestNetworkingUpdates(t *testing.T) {
	oldCIDR := networkPolicy(fromPeer(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "010.0.0.0/8"}}))
	newCIDR := oldCIDR.DeepCopy()
	newCIDR.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/33"}}}}}
	oldTLS := ingress(func(i *networkingv1.Ingress) { i.Spec.TLS = []networkingv1.IngressTLS{{SecretName: "Old_Name"}} })
	newTLS := oldTLS.DeepCopy()
	newTLS.Spec.TLS = append(newTLS.Spec.TLS, networkingv1.IngressTLS{SecretName: "Another_Bad"})
	runUpdate(t, []updateCase{
		{name: "stored cidr kept, new one checked", old: oldCIDR, new: newCIDR,
			want: []want{{"spec.egress[0].to[0].ipBlock.cidr", "FieldValueInvalid"}}},
		{name: "stored secret names let others pass", old: oldTLS, new: newTLS},
		{name: "new bad secret name", old: ingress(nil), new: newTLS,
			want: []want{{"spec.tls[0].secretName", "FieldValueInvalid"}, {"spec.tls[1].secretName", "FieldValueInvalid"}}},
		{name: "controller immutable", old: ingressClass(nil), new: ingressClass(func(s *networkingv1.IngressClassSpec) { s.Controller = "example.com/other" }),
			want: []want{{"spec.controller", "FieldValueInvalid"}}},
	})
	status := ingress(nil)
	status.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.300"}, {Hostname: "192.0.2.1"}}
	expectErrors(t, ValidateStatusUpdate(status, ingress(nil)), []want{
		{"status.loadBalancer.ingress[0].ip", "FieldValueInvalid"}, {"status.loadBalancer.ingress[1].hostname", "FieldValueInvalid"}})
}
