package tables

import (
	"slices"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// networking.k8s.io/v1, as Kubernetes' printers (printIngress,
// printIngressClass, printNetworkPolicy) with their column descriptions.

var ingressColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Class", "string", "The name of the IngressClass resource that should be used for additional configuration"),
	column("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
	column("Address", "string", "Address is a list containing ingress points for the load-balancer"),
	column("Ports", "string", "Ports of TLS configurations that open"),
	ageColumn(),
}

// ingressRow: the first three rule hosts ("*" when no rule names one), the
// load balancer's addresses sorted and without repeats (server-side
// tables are always wide, so not shortened), and 80 or "80, 443" with TLS.
func ingressRow(ing *networkingv1.Ingress, now time.Time) metav1.TableRow {
	const limit = 3
	var hosts []string
	more := false
	for _, r := range ing.Spec.Rules {
		more = more || len(hosts) == limit
		if !more && r.Host != "" {
			hosts = append(hosts, r.Host)
		}
	}
	hostsCell, total := "*", len(hosts)
	if more {
		total = len(ing.Spec.Rules) // upstream counts the rules left, hosts or not
	}
	if len(hosts) > 0 {
		hostsCell = firstFew(hosts, total, limit)
	}
	var addrs []string
	for _, in := range ing.Status.LoadBalancer.Ingress {
		a := in.IP
		if a == "" {
			a = in.Hostname
		}
		if a != "" && !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	slices.Sort(addrs)
	ports := "80"
	if len(ing.Spec.TLS) != 0 {
		ports = "80, 443"
	}
	return metav1.TableRow{Cells: []any{
		ing.Name, derefOr(ing.Spec.IngressClassName, none), hostsCell, strings.Join(addrs, ","), ports, age(ing.CreationTimestamp, now),
	}}
}

var ingressClassColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Controller", "string", "Controller that is responsible for handling this class"),
	column("Parameters", "string", "A reference to a resource with additional parameters"),
	ageColumn(),
}

// ingressClassRow names the parameters kind[.group]/name.
func ingressClassRow(ic *networkingv1.IngressClass, now time.Time) metav1.TableRow {
	params := none
	if p := ic.Spec.Parameters; p != nil {
		params = p.Kind
		if p.APIGroup != nil {
			params += "." + *p.APIGroup
		}
		params += "/" + p.Name
	}
	return metav1.TableRow{Cells: []any{ic.Name, ic.Spec.Controller, params, age(ic.CreationTimestamp, now)}}
}

var networkPolicyColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Pod-Selector", "string", networkingv1.NetworkPolicySpec{}.SwaggerDoc()["podSelector"]),
	ageColumn(),
}

func networkPolicyRow(np *networkingv1.NetworkPolicy, now time.Time) metav1.TableRow {
	return metav1.TableRow{Cells: []any{np.Name, selectorString(&np.Spec.PodSelector), age(np.CreationTimestamp, now)}}
}
