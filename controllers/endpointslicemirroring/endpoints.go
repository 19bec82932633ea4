package endpointslicemirroring

import (
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// toEndpoint is the slice endpoint of an Endpoints address and its family; ok is false when the
// address is not an IP. The IP is written in its canonical form.
func toEndpoint(a corev1.EndpointAddress, ready bool) (e discoveryv1.Endpoint, at discoveryv1.AddressType, ok bool) {
	ip := net.ParseIP(a.IP)
	if ip == nil {
		return e, "", false
	}
	at = discoveryv1.AddressTypeIPv4
	if ip.To4() == nil {
		at = discoveryv1.AddressTypeIPv6
	}
	e = discoveryv1.Endpoint{
		Addresses:  []string{ip.String()},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready},
	}
	if a.TargetRef != nil {
		ref := *a.TargetRef
		e.TargetRef = &ref
	}
	if a.NodeName != nil {
		n := *a.NodeName
		e.NodeName = &n
	}
	if a.Hostname != "" {
		h := a.Hostname
		e.Hostname = &h
	}
	return e, at, true
}

// slicePorts converts a subset's ports, in a stable order (name, then port, then protocol).
func slicePorts(ps []corev1.EndpointPort) []discoveryv1.EndpointPort {
	out := make([]discoveryv1.EndpointPort, 0, len(ps))
	for _, p := range ps {
		name, port, proto := p.Name, p.Port, p.Protocol
		var app *string
		if p.AppProtocol != nil {
			a := *p.AppProtocol
			app = &a
		}
		out = append(out, discoveryv1.EndpointPort{Name: &name, Port: &port, Protocol: &proto, AppProtocol: app})
	}
	sort.SliceStable(out, func(i, j int) bool { return portString(out[i]) < portString(out[j]) })
	return out
}

func portString(p discoveryv1.EndpointPort) string {
	var b strings.Builder
	if p.Name != nil {
		b.WriteString(*p.Name)
	}
	b.WriteByte('/')
	if p.Port != nil {
		b.WriteString(strconv.Itoa(int(*p.Port)))
	}
	b.WriteByte('/')
	if p.Protocol != nil {
		b.WriteString(string(*p.Protocol))
	}
	b.WriteByte('/')
	if p.AppProtocol != nil {
		b.WriteString(*p.AppProtocol)
	}
	return b.String()
}

// groupKey identifies a slice's address family and set of ports, whatever their order.
func groupKey(at discoveryv1.AddressType, ps []discoveryv1.EndpointPort) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = portString(p)
	}
	sort.Strings(parts)
	return string(at) + ";" + strings.Join(parts, ";")
}

// addressKey tells addresses apart when repacking: the same IP for different targets is kept twice.
type addressKey struct {
	ip  string
	uid types.UID
}

// repackSubsets puts Endpoints subsets in canonical form, as the Kubernetes API server does and
// the mirroring controller does again: each address once per port, not-ready winning when it is
// listed both ways, then addresses regrouped by the set of ports they share. Subsets, their
// addresses and ports come out sorted.
func repackSubsets(subsets []corev1.EndpointSubset) []corev1.EndpointSubset {
	addrs := map[addressKey]*corev1.EndpointAddress{}
	type readiness map[addressKey]bool
	// Ports are told apart by value (AppProtocol is a pointer).
	type portKey struct {
		name, proto, app string
		port             int32
		hasApp           bool
	}
	ports := map[portKey]corev1.EndpointPort{}
	byPort := map[portKey]readiness{}
	note := func(a *corev1.EndpointAddress, p corev1.EndpointPort, ready bool) {
		port := portKey{name: p.Name, proto: string(p.Protocol), port: p.Port}
		if p.AppProtocol != nil {
			port.app, port.hasApp = *p.AppProtocol, true
		}
		ports[port] = p
		k := addressKey{ip: a.IP}
		if a.TargetRef != nil {
			k.uid = a.TargetRef.UID
		}
		if _, ok := addrs[k]; !ok {
			cp := *a
			addrs[k] = &cp
		}
		r := byPort[port]
		if r == nil {
			r = readiness{}
			byPort[port] = r
		}
		if was, ok := r[k]; !ok || was {
			r[k] = ready
		}
	}
	for i := range subsets {
		ss := &subsets[i]
		sp := ss.Ports
		if len(sp) == 0 {
			sp = []corev1.EndpointPort{{Port: -1}} // addresses without ports are kept too
		}
		for _, p := range sp {
			for j := range ss.Addresses {
				note(&ss.Addresses[j], p, true)
			}
			for j := range ss.NotReadyAddresses {
				note(&ss.NotReadyAddresses[j], p, false)
			}
		}
	}

	// Ports sharing the same addresses, with the same readiness, make one subset.
	setKey := func(r readiness) string {
		parts := make([]string, 0, len(r))
		for k, ready := range r {
			parts = append(parts, k.ip+"/"+string(k.uid)+"/"+strconv.FormatBool(ready))
		}
		sort.Strings(parts)
		return strings.Join(parts, ",")
	}
	type subsetAcc struct {
		r     readiness
		ports []corev1.EndpointPort
	}
	bySet := map[string]*subsetAcc{}
	for p, r := range byPort {
		k := setKey(r)
		acc, ok := bySet[k]
		if !ok {
			acc = &subsetAcc{r: r}
			bySet[k] = acc
		}
		if p.port > 0 {
			acc.ports = append(acc.ports, ports[p])
		}
	}

	out := make([]corev1.EndpointSubset, 0, len(bySet))
	for _, k := range sortedKeys(bySet) {
		acc := bySet[k]
		var ss corev1.EndpointSubset
		for ak, ready := range acc.r {
			if ready {
				ss.Addresses = append(ss.Addresses, *addrs[ak])
			} else {
				ss.NotReadyAddresses = append(ss.NotReadyAddresses, *addrs[ak])
			}
		}
		sortAddresses(ss.Addresses)
		sortAddresses(ss.NotReadyAddresses)
		sort.Slice(acc.ports, func(i, j int) bool {
			a, b := acc.ports[i], acc.ports[j]
			if a.Name != b.Name {
				return a.Name < b.Name
			}
			if a.Port != b.Port {
				return a.Port < b.Port
			}
			return a.Protocol < b.Protocol
		})
		ss.Ports = acc.ports
		out = append(out, ss)
	}
	return out
}

func sortAddresses(as []corev1.EndpointAddress) {
	uid := func(a corev1.EndpointAddress) types.UID {
		if a.TargetRef == nil {
			return ""
		}
		return a.TargetRef.UID
	}
	sort.Slice(as, func(i, j int) bool {
		if as[i].IP != as[j].IP {
			return as[i].IP < as[j].IP
		}
		return uid(as[i]) < uid(as[j])
	})
}
