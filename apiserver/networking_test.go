package apiserver_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func testIngress(name string) *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To("nginx"),
			TLS:              []networkingv1.IngressTLS{{Hosts: []string{"shop.example.com"}, SecretName: "shop-tls"}},
			Rules: []networkingv1.IngressRule{{
				Host: "shop.example.com",
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
					Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}},
				}}}},
			}, {Host: "api.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/v1", PathType: ptr.To(networkingv1.PathTypeExact),
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "api", Port: networkingv1.ServiceBackendPort{Name: "http"}}},
			}}}}}},
		},
	}
}

// TestNetworkingServed: networking.k8s.io/v1 serves ingresses (short name
// ing, status subresource), ingressclasses (cluster-scoped) and
// networkpolicies (netpol) as kube-apiserver v1.33 does: discovery, CRUD,
// generation, defaults, validation and object count quota. Nothing acts on them: ingress controllers and network
// plugins are add-ons.
func TestNetworkingServed(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()

	list, err := cs.Discovery().ServerResourcesForGroupVersion("networking.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		namespaced bool
		short      string
	}
	got := map[string]res{}
	for _, r := range list.APIResources {
		got[r.Name] = res{r.Namespaced, strings.Join(r.ShortNames, ",")}
		if len(r.Categories) != 0 {
			t.Errorf("%s: categories %v, want none (not in `kubectl get all`)", r.Name, r.Categories)
		}
	}
	want := map[string]res{"ingresses": {true, "ing"}, "ingresses/status": {true, ""}, "ingressclasses": {false, ""}, "networkpolicies": {true, "netpol"}}
	for name, w := range want {
		if g, ok := got[name]; !ok || g != w {
			t.Errorf("discovery %s: %+v (served %v), want %+v", name, g, ok, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("networking.k8s.io/v1 serves %v, want exactly %v", got, want)
	}

	// Ingress: create ignores status, update keeps it, status writes
	// change nothing else.
	ings := cs.NetworkingV1().Ingresses("default")
	in := testIngress("shop")
	in.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.9"}}
	ing, err := ings.Create(ctx, in, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ing.Generation != 1 || len(ing.Status.LoadBalancer.Ingress) != 0 {
		t.Fatalf("created: generation %d status %+v, want 1 and no status", ing.Generation, ing.Status)
	}
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.10"}, {Hostname: "lb.example.com"}}
	ing.Spec.Rules[0].Host = "changed.example.com"
	ing, err = ings.UpdateStatus(ctx, ing, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ing.Spec.Rules[0].Host != "shop.example.com" || len(ing.Status.LoadBalancer.Ingress) != 2 || ing.Generation != 1 {
		t.Fatalf("after status write: host %q status %+v generation %d", ing.Spec.Rules[0].Host, ing.Status, ing.Generation)
	}
	ing.Status = networkingv1.IngressStatus{}
	ing.Spec.Rules[0].Host = "www.example.com"
	ing, err = ings.Update(ctx, ing, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ing.Spec.Rules[0].Host != "www.example.com" || len(ing.Status.LoadBalancer.Ingress) != 2 || ing.Generation != 2 {
		t.Fatalf("after update: host %q status %+v generation %d", ing.Spec.Rules[0].Host, ing.Status, ing.Generation)
	}
	bad := ing.DeepCopy()
	bad.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{Hostname: "192.0.2.1"}}
	_, err = ings.UpdateStatus(ctx, bad, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `status.loadBalancer.ingress[0].hostname: Invalid value: "192.0.2.1": must be a DNS name, not an IP address`) {
		t.Errorf("status with an IP for a hostname: %v", err)
	}
	invalid := testIngress("bad")
	invalid.Spec.Rules[0].HTTP.Paths[0].Path = "shop"
	_, err = ings.Create(ctx, invalid, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || err.Error() != `Ingress.networking.k8s.io "bad" is invalid: spec.rules[0].http.paths[0].path: Invalid value: "shop": must be an absolute path` {
		t.Errorf("relative Prefix path: %v", err)
	}
	if l, err := ings.List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 1 {
		t.Errorf("list: %v %d items", err, len(l.Items))
	}

	// IngressClass: cluster-scoped, parameters default to Cluster scope,
	// the controller cannot change.
	ics := cs.NetworkingV1().IngressClasses()
	ic, err := ics.Create(ctx, &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx"}, Spec: networkingv1.IngressClassSpec{
		Controller: "k8s.io/ingress-nginx",
		Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr.To("k8s.example.com"), Kind: "IngressParameters", Name: "external-lb"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ic.Namespace != "" || ic.Spec.Parameters.Scope == nil || *ic.Spec.Parameters.Scope != "Cluster" || ic.Generation != 1 {
		t.Errorf("ingress class: namespace %q scope %v generation %d", ic.Namespace, ic.Spec.Parameters.Scope, ic.Generation)
	}
	ic.Spec.Controller = "example.com/other"
	_, err = ics.Update(ctx, ic, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.controller: Invalid value: \"example.com/other\": field is immutable") {
		t.Errorf("controller change: %v", err)
	}
	_, err = ics.Create(ctx, &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: networkingv1.IngressClassSpec{Controller: "nginx"}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")`) {
		t.Errorf("controller not domain-prefixed: %v", err)
	}

	// NetworkPolicy: policyTypes and port protocols defaulted.
	nps := cs.NetworkingV1().NetworkPolicies("default")
	np, err := nps.Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		Egress: []networkingv1.NetworkPolicyEgressRule{{
			Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(5432))}},
			To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}}},
		}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{"Ingress", "Egress"}) || ptr.Deref(np.Spec.Egress[0].Ports[0].Protocol, "") != corev1.ProtocolTCP {
		t.Errorf("network policy defaults: policyTypes %v protocol %v", np.Spec.PolicyTypes, np.Spec.Egress[0].Ports[0].Protocol)
	}
	np.Spec.Egress[0].Ports[0].EndPort = ptr.To[int32](80)
	_, err = nps.Update(ctx, np, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.egress[0].ports[0].endPort: Invalid value: 80: must be greater than or equal to `port`") {
		t.Errorf("endPort below port: %v", err)
	}

	for _, del := range []error{
		ings.Delete(ctx, "shop", metav1.DeleteOptions{}), ics.Delete(ctx, "nginx", metav1.DeleteOptions{}), nps.Delete(ctx, "db", metav1.DeleteOptions{}),
	} {
		if del != nil {
			t.Errorf("delete: %v", del)
		}
	}
	if _, err := ings.Get(ctx, "shop", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v", err)
	}

	// Quota counts them as count/<resource>.networking.k8s.io.
	namespace(t, cs, "netq", nil)
	hard := corev1.ResourceList{"count/ingresses.networking.k8s.io": resource.MustParse("1")}
	q, err := cs.CoreV1().ResourceQuotas("netq").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "ing"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Status.Hard, q.Status.Used = hard, corev1.ResourceList{"count/ingresses.networking.k8s.io": resource.MustParse("0")}
	if _, err := cs.CoreV1().ResourceQuotas("netq").UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.NetworkingV1().Ingresses("netq").Create(ctx, testIngress("one"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = cs.NetworkingV1().Ingresses("netq").Create(ctx, testIngress("two"), metav1.CreateOptions{})
	forbiddenWith(t, err, "exceeded quota: ing, requested: count/ingresses.networking.k8s.io=1, used: count/ingresses.networking.k8s.io=1, limited: count/ingresses.networking.k8s.io=1")
}

// TestDefaultIngressClass: as kube-apiserver v1.33's DefaultIngressClass
// admission plugin (on by default), a new Ingress that names no class,
// neither in spec.ingressClassName nor in the kubernetes.io/ingress.class
// annotation, gets the IngressClass annotated
// ingressclass.kubernetes.io/is-default-class: "true", the newest of
// several; without one it is left as it is, and updates never change it.
func TestDefaultIngressClass(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	ings := cs.NetworkingV1().Ingresses("default")
	create := func(name string, mutate func(*networkingv1.Ingress)) *networkingv1.Ingress {
		t.Helper()
		in := testIngress(name)
		in.Spec.IngressClassName = nil
		if mutate != nil {
			mutate(in)
		}
		ing, err := ings.Create(ctx, in, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return ing
	}
	if ing := create("before", nil); ing.Spec.IngressClassName != nil {
		t.Errorf("no default class: ingressClassName %q, want none", *ing.Spec.IngressClassName)
	}
	class := func(name string, isDefault string) {
		t.Helper()
		ic := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IngressClassSpec{Controller: "example.com/" + name}}
		if isDefault != "" {
			ic.Annotations = map[string]string{networkingv1.AnnotationIsDefaultIngressClass: isDefault}
		}
		if _, err := cs.NetworkingV1().IngressClasses().Create(ctx, ic, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	class("plain", "")
	class("maybe", "True") // only "true" marks the default
	class("nginx", "true")
	if ing := create("defaulted", nil); ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != "nginx" {
		t.Errorf("with default class nginx: ingressClassName %v, want nginx", ing.Spec.IngressClassName)
	}
	if ing := create("named", func(i *networkingv1.Ingress) { i.Spec.IngressClassName = ptr.To("plain") }); *ing.Spec.IngressClassName != "plain" {
		t.Errorf("named class: ingressClassName %q, want plain", *ing.Spec.IngressClassName)
	}
	annotated := create("annotated", func(i *networkingv1.Ingress) {
		i.Annotations = map[string]string{"kubernetes.io/ingress.class": "traefik"}
	})
	if annotated.Spec.IngressClassName != nil {
		t.Errorf("class annotation: ingressClassName %q, want none", *annotated.Spec.IngressClassName)
	}
	before, err := ings.Get(ctx, "before", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before.Labels = map[string]string{"edited": "yes"}
	if before, err = ings.Update(ctx, before, metav1.UpdateOptions{}); err != nil || before.Spec.IngressClassName != nil {
		t.Errorf("update of an ingress without class: %v, ingressClassName %v, want none", err, before.Spec.IngressClassName)
	}

	time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second resolution
	class("newer", "true")
	if ing := create("newest", nil); ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != "newer" {
		t.Errorf("with two default classes: ingressClassName %v, want the newer one", ing.Spec.IngressClassName)
	}
}

// tableOf fetches path as kubectl does for `kubectl get` and returns the
// column names and the first row's cells.
func tableOf(t *testing.T, c *client, path string) ([]string, []any) {
	t.Helper()
	resp, data := c.do("GET", path, "", nil, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	var table metav1.Table
	if err := json.Unmarshal(data, &table); err != nil || resp.StatusCode != 200 || len(table.Rows) == 0 {
		t.Fatalf("table of %s: %d %s", path, resp.StatusCode, data)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	return cols, table.Rows[0].Cells
}

// TestNetworkingTables: kubectl get shows upstream's columns for the three
// kinds (printIngress, printIngressClass, printNetworkPolicy).
func TestNetworkingTables(t *testing.T) {
	cs, srv := clientset(t)
	ctx := context.Background()
	admin := newClient(t, srv)
	ing, err := cs.NetworkingV1().Ingresses("default").Create(ctx, testIngress("shop"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{Hostname: "lb.example.com"}, {IP: "192.0.2.10"}}
	if _, err := cs.NetworkingV1().Ingresses("default").UpdateStatus(ctx, ing, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.NetworkingV1().IngressClasses().Create(ctx, &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx"}, Spec: networkingv1.IngressClassSpec{
		Controller: "k8s.io/ingress-nginx",
		Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr.To("k8s.example.com"), Kind: "IngressParameters", Name: "external-lb"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.NetworkingV1().NetworkPolicies("default").Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cols, cells := tableOf(t, admin, "/apis/networking.k8s.io/v1/namespaces/default/ingresses")
	if !slices.Equal(cols, []string{"Name", "Class", "Hosts", "Address", "Ports", "Age"}) ||
		!slices.Equal(cells[:5], []any{"shop", "nginx", "shop.example.com,api.example.com", "192.0.2.10,lb.example.com", "80, 443"}) {
		t.Errorf("ingress table: %v %v", cols, cells)
	}
	cols, cells = tableOf(t, admin, "/apis/networking.k8s.io/v1/ingressclasses")
	if !slices.Equal(cols, []string{"Name", "Controller", "Parameters", "Age"}) ||
		!slices.Equal(cells[:3], []any{"nginx", "k8s.io/ingress-nginx", "IngressParameters.k8s.example.com/external-lb"}) {
		t.Errorf("ingress class table: %v %v", cols, cells)
	}
	cols, cells = tableOf(t, admin, "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies")
	if !slices.Equal(cols, []string{"Name", "Pod-Selector", "Age"}) || !slices.Equal(cells[:2], []any{"db", "app=db"}) {
		t.Errorf("network policy table: %v %v", cols, cells)
	}
}

// An Ingress still using the deprecated class annotation, and no
// ingressClassName, gets v1.33's warning on create; a NetworkPolicy CIDR
// with bits beyond its prefix is accepted with v1.33's warning, again only
// when the spec changes.
func TestNetworkingWarnings(t *testing.T) {
	cs, expect := warningsClient(t)
	ctx := context.Background()

	in := testIngress("legacy")
	in.Spec.IngressClassName = nil
	in.Annotations = map[string]string{"kubernetes.io/ingress.class": "nginx"}
	ing, err := cs.NetworkingV1().Ingresses("default").Create(ctx, in, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expect("create with the class annotation", `annotation "kubernetes.io/ingress.class" is deprecated, please use 'spec.ingressClassName' instead`)
	ing.Labels = map[string]string{"a": "b"}
	if _, err := cs.NetworkingV1().Ingresses("default").Update(ctx, ing, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("update")
	if _, err := cs.NetworkingV1().Ingresses("default").Create(ctx, testIngress("modern"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("create with ingressClassName")

	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: networkingv1.NetworkPolicySpec{
		Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.1/8", Except: []string{"10.1.0.0/16"}}}}}},
	}}
	np, err = cs.NetworkingV1().NetworkPolicies("default").Create(ctx, np, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ambiguous := `spec.ingress[0].from[0].ipBlock.cidr: CIDR value "10.0.0.1/8" is ambiguous in this context (should be "10.0.0.0/8" or "10.0.0.1/32"?)`
	expect("create with an ambiguous cidr", ambiguous)
	np.Labels = map[string]string{"a": "b"}
	if np, err = cs.NetworkingV1().NetworkPolicies("default").Update(ctx, np, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("update of the labels")
	np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
	if _, err := cs.NetworkingV1().NetworkPolicies("default").Update(ctx, np, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("update of the spec", ambiguous)
}
