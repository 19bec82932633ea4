package endpointslice

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// addressTypes are the address families the Service gets slices of, as in Kubernetes: one per entry
// of spec.ipFamilies, in its order. A Service without ipFamilies (written before they were defaulted)
// gets the family of its cluster IP, or both families when headless, so that no slice it already
// has is deleted until the API server fills them in.
func addressTypes(svc *corev1.Service) []discoveryv1.AddressType {
	var out []discoveryv1.AddressType
	for _, f := range svc.Spec.IPFamilies {
		var at discoveryv1.AddressType
		switch f {
		case corev1.IPv4Protocol:
			at = discoveryv1.AddressTypeIPv4
		case corev1.IPv6Protocol:
			at = discoveryv1.AddressTypeIPv6
		default:
			continue
		}
		if !slices.Contains(out, at) {
			out = append(out, at)
		}
	}
	switch {
	case len(out) > 0:
		return out
	case svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone:
		return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}
	}
	if ip := net.ParseIP(svc.Spec.ClusterIP); ip != nil && ip.To4() == nil {
		return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv6}
	}
	return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4}
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

// listed reports whether a pod can be an endpoint: not finished, with an address of the family.
func listed(pod *corev1.Pod, at discoveryv1.AddressType) bool {
	return !podstate.IsTerminal(pod) && podAddress(pod, at) != ""
}

// endpointFor builds the endpoint of a listed pod; node is the pod's Node, nil if unknown, and gives
// the endpoint its zone.
func endpointFor(svc *corev1.Service, pod *corev1.Pod, node *corev1.Node, at discoveryv1.AddressType) discoveryv1.Endpoint {
	addr := podAddress(pod, at)
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
	if node != nil && node.Labels[corev1.LabelTopologyZone] != "" {
		z := node.Labels[corev1.LabelTopologyZone]
		ep.Zone = &z
	}
	if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && svc.Namespace == pod.Namespace {
		h := pod.Spec.Hostname
		ep.Hostname = &h
	}
	return ep
}

// group is the endpoints that share one list of resolved ports.
type group struct {
	key       string // portsKey(ports)
	ports     []discoveryv1.EndpointPort
	endpoints []discoveryv1.Endpoint
}

// desiredGroups computes the endpoints of a Service in family at, grouped by resolved ports, in a
// stable order. As in Kubernetes, a pod whose Node is not known is left out (unless the Service
// publishes not-ready addresses: then it is listed without a zone) and named in missing, so that the
// Service is synced again: the pod garbage collector should remove it, but until then a node that
// appears later (a cache behind) must not keep it out for good.
func (c *Controller) desiredGroups(svc *corev1.Service, pods []*corev1.Pod, at discoveryv1.AddressType) (groups []group, missing []string, err error) {
	byKey := map[string]*group{}
	for _, pod := range pods {
		if !listed(pod, at) {
			continue
		}
		node, err := c.nodeLister.Get(pod.Spec.NodeName)
		if err != nil {
			if !apierrors.IsNotFound(err) {
				return nil, nil, err
			}
			node = nil
			if !svc.Spec.PublishNotReadyAddresses {
				missing = append(missing, fmt.Sprintf("pod %s on node %q", pod.Name, pod.Spec.NodeName))
				continue
			}
		}
		ep := endpointFor(svc, pod, node, at)
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
	return out, missing, nil
}
