package framework

import v1 "k8s.io/api/core/v1"

// DefaultBindAllHostIP is the address a hostPort binds when no hostIP is given.
const DefaultBindAllHostIP = "0.0.0.0"

// ProtocolPort is one protocol/port pair.
type ProtocolPort struct {
	Protocol string
	Port     int32
}

// HostPortInfo records host ports in use: host IP → protocol/port set.
type HostPortInfo map[string]map[ProtocolPort]int

func sanitize(ip, protocol string) (string, string) {
	if ip == "" {
		ip = DefaultBindAllHostIP
	}
	if protocol == "" {
		protocol = string(v1.ProtocolTCP)
	}
	return ip, protocol
}

// Add records one host port.
func (h HostPortInfo) Add(ip, protocol string, port int32) {
	if port <= 0 {
		return
	}
	ip, protocol = sanitize(ip, protocol)
	if h[ip] == nil {
		h[ip] = map[ProtocolPort]int{}
	}
	h[ip][ProtocolPort{protocol, port}]++
}

// Remove forgets one host port.
func (h HostPortInfo) Remove(ip, protocol string, port int32) {
	if port <= 0 {
		return
	}
	ip, protocol = sanitize(ip, protocol)
	pp := ProtocolPort{protocol, port}
	if m := h[ip]; m != nil {
		if m[pp] <= 1 {
			delete(m, pp)
		} else {
			m[pp]--
		}
		if len(m) == 0 {
			delete(h, ip)
		}
	}
}

// CheckConflict reports whether binding ip/protocol/port would clash: the
// same port on the same address, or on any address when either side binds
// 0.0.0.0.
func (h HostPortInfo) CheckConflict(ip, protocol string, port int32) bool {
	if port <= 0 {
		return false
	}
	ip, protocol = sanitize(ip, protocol)
	pp := ProtocolPort{protocol, port}
	if ip == DefaultBindAllHostIP {
		for _, m := range h {
			if m[pp] > 0 {
				return true
			}
		}
		return false
	}
	return h[ip][pp] > 0 || h[DefaultBindAllHostIP][pp] > 0
}

// AddPod records the host ports of pod's containers and sidecars.
func (h HostPortInfo) AddPod(pod *v1.Pod) {
	ForEachHostPort(pod, func(p *v1.ContainerPort) { h.Add(p.HostIP, string(p.Protocol), p.HostPort) })
}

// RemovePod forgets pod's host ports.
func (h HostPortInfo) RemovePod(pod *v1.Pod) {
	ForEachHostPort(pod, func(p *v1.ContainerPort) { h.Remove(p.HostIP, string(p.Protocol), p.HostPort) })
}

// Clone deep-copies.
func (h HostPortInfo) Clone() HostPortInfo {
	out := make(HostPortInfo, len(h))
	for ip, m := range h {
		c := make(map[ProtocolPort]int, len(m))
		for k, v := range m {
			c[k] = v
		}
		out[ip] = c
	}
	return out
}

// ForEachHostPort calls fn for each container port with a host port. Init
// containers count only when restartable (sidecars): the others have exited
// before the pod's containers start, so, as in kube-scheduler, they hold no
// port for the pod's lifetime.
func ForEachHostPort(pod *v1.Pod, fn func(*v1.ContainerPort)) {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			forEachHostPort(c, fn)
		}
	}
	for i := range pod.Spec.Containers {
		forEachHostPort(&pod.Spec.Containers[i], fn)
	}
}

func forEachHostPort(c *v1.Container, fn func(*v1.ContainerPort)) {
	for j := range c.Ports {
		if c.Ports[j].HostPort > 0 {
			fn(&c.Ports[j])
		}
	}
}
