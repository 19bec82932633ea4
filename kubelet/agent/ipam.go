package agent

import (
	"fmt"
	"net/netip"
	"sync"
)

// podIPs hands out pod addresses from the node's pod CIDR: not the network
// address, not the first address (the bridge's gateway), not the broadcast.
type podIPs struct {
	mu     sync.Mutex
	prefix netip.Prefix
	used   map[netip.Addr]string // address → pod UID
	byPod  map[string]netip.Addr
}

func newPodIPs(cidr string) (*podIPs, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("node pod CIDR %q: %w", cidr, err)
	}
	return &podIPs{prefix: p.Masked(), used: map[netip.Addr]string{}, byPod: map[string]netip.Addr{}}, nil
}

// allocate returns the pod's address, taking a new one on first call.
func (a *podIPs) allocate(uid string) (netip.Addr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ip, ok := a.byPod[uid]; ok {
		return ip, nil
	}
	gw := a.prefix.Addr().Next()
	for ip := gw.Next(); a.prefix.Contains(ip); ip = ip.Next() {
		if !a.prefix.Contains(ip.Next()) && ip.Is4() {
			break // broadcast
		}
		if _, taken := a.used[ip]; !taken {
			a.used[ip], a.byPod[uid] = uid, ip
			return ip, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("no free pod IP left in %s", a.prefix)
}

// adopt records an address a pod already has (after an agent restart).
func (a *podIPs) adopt(uid string, ip netip.Addr) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.prefix.Contains(ip) {
		return
	}
	if _, taken := a.used[ip]; !taken {
		a.used[ip], a.byPod[uid] = uid, ip
	}
}

func (a *podIPs) release(uid string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ip, ok := a.byPod[uid]; ok {
		delete(a.used, ip)
		delete(a.byPod, uid)
	}
}
