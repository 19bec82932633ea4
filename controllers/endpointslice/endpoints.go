package endpointslice

import (
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/controllers/podstate"
)

// podPorts resolves every Service port for one pod; ports the pod does not have are left out.
func podPorts(svc *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	out := []discoveryv1.EndpointPort{}
	for _, sp := range svc.Spec.Ports {
		n, ok := podstate.ResolvePort(pod, sp)
		if !ok {
			continue
		}
		name, proto, port := sp.Name, sp.Protocol, n
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		out = append(out, discoveryv1.EndpointPort{Name: &name, Protocol: &proto, Port: &port, AppProtocol: sp.AppProtocol})
	}
	return out
}

// portsKey identifies a list of ports; slices and endpoints with the same key go together. Nil
// fields (a slice written by someone else) are read as empty.
func portsKey(ps []discoveryv1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(ptr.Deref(p.Name, "") + "/" + string(ptr.Deref(p.Protocol, "")) + "/")
		b.WriteString(strconv.Itoa(int(ptr.Deref(p.Port, 0))))
		if p.AppProtocol != nil {
			b.WriteString("/" + *p.AppProtocol)
		}
		b.WriteString(";")
	}
	return b.String()
}

// endpointKey identifies an endpoint from one sync to the next, as Kubernetes does: by its addresses,
// hostname and target. Its conditions, node and zone can change while it stays in its slice.
func endpointKey(e *discoveryv1.Endpoint) string {
	addrs := slices.Sorted(slices.Values(e.Addresses))
	k := strings.Join(addrs, ",") + "|" + ptr.Deref(e.Hostname, "") + "|"
	if e.TargetRef != nil {
		k += e.TargetRef.Namespace + "/" + e.TargetRef.Name
	}
	return k
}

// addressType is the family of the Service's primary IP family.
func addressType(svc *corev1.Service) discoveryv1.AddressType {
	if len(svc.Spec.IPFamilies) > 0 && svc.Spec.IPFamilies[0] == corev1.IPv6Protocol {
		return discoveryv1.AddressTypeIPv6
	}
	return discoveryv1.AddressTypeIPv4
}

// podAddress returns the pod's IP of the wanted family.
func podAddress(pod *corev1.Pod, at discoveryv1.AddressType) string {
	ips := []string{pod.Status.PodIP}
	for _, ip := range pod.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip == nil {
			continue
		}
		if (ip.To4() != nil) == (at == discoveryv1.AddressTypeIPv4) {
			return s
		}
	}
	return ""
}

// endpointFor builds the endpoint of one pod, or reports false if the pod should not be listed:
// finished pods and pods without an address of the Service's family.
func endpointFor(svc *corev1.Service, pod *corev1.Pod, at discoveryv1.AddressType) (discoveryv1.Endpoint, bool) {
	if podstate.IsTerminal(pod) {
		return discoveryv1.Endpoint{}, false
	}
	addr := podAddress(pod, at)
	if addr == "" {
		return discoveryv1.Endpoint{}, false
	}
	terminating := pod.DeletionTimestamp != nil
	podReady := podstate.IsReady(pod)
	// publishNotReadyAddresses makes every endpoint ready, but serving still says whether the pod is.
	ready := svc.Spec.PublishNotReadyAddresses || (podReady && !terminating)
	serving := podReady
	ep := discoveryv1.Endpoint{
		Addresses:  []string{addr},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if pod.Spec.NodeName != "" {
		n := pod.Spec.NodeName
		ep.NodeName = &n
	}
	if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && svc.Namespace == pod.Namespace {
		h := pod.Spec.Hostname
		ep.Hostname = &h
	}
	return ep, true
}

// group is the endpoints that share one list of resolved ports.
type group struct {
	key       string // portsKey(ports)
	ports     []discoveryv1.EndpointPort
	endpoints []discoveryv1.Endpoint
}

// desiredGroups computes the endpoints of a Service, grouped by resolved ports, in a stable order.
func desiredGroups(svc *corev1.Service, pods []*corev1.Pod) []group {
	at := addressType(svc)
	byKey := map[string]*group{}
	for _, pod := range pods {
		ep, ok := endpointFor(svc, pod, at)
		if !ok {
			continue
		}
		ports := podPorts(svc, pod)
		k := portsKey(ports)
		g, ok := byKey[k]
		if !ok {
			g = &group{key: k, ports: ports}
			byKey[k] = g
		}
		g.endpoints = append(g.endpoints, ep)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]group, 0, len(keys))
	for _, k := range keys {
		g := byKey[k]
		sort.Slice(g.endpoints, func(i, j int) bool { return g.endpoints[i].Addresses[0] < g.endpoints[j].Addresses[0] })
		out = append(out, *g)
	}
	return out
}
