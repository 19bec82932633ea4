package apiserver

import (
	"fmt"

	"github.com/skiffkube/skiff/apiserver/allocator"
	"github.com/skiffkube/skiff/apiserver/services"
	"github.com/skiffkube/skiff/storage"
)

// serviceLifecycle builds the cluster IP and node port allocation of
// Services. The range allocators keep their bitmaps in the store itself,
// so they need the concrete store; with another Store implementation
// Services are served without allocation.
func serviceLifecycle(cfg Config) (*services.Lifecycle, error) {
	st, ok := cfg.Store.(*storage.Store)
	if !ok {
		return nil, nil
	}
	cidr, ports := cfg.ServiceCIDR, cfg.NodePortRange
	if cidr == "" {
		cidr = allocator.DefaultServiceCIDR
	}
	if ports == "" {
		ports = allocator.DefaultNodePortRange
	}
	ips, err := allocator.NewIPs(st, cidr)
	if err != nil {
		return nil, fmt.Errorf("apiserver: service CIDR: %w", err)
	}
	np, err := allocator.NewPorts(st, ports)
	if err != nil {
		return nil, fmt.Errorf("apiserver: node port range: %w", err)
	}
	return &services.Lifecycle{IPs: ips, Ports: np}, nil
}
