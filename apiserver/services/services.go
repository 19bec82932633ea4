package services

import (
	"context"
	stderrors "errors"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiffkube/skiff/apiserver/allocator"
	"github.com/skiffkube/skiff/apiserver/registry"
)

// IPAllocator hands out cluster IPs (allocator.IPs). CheckSpecific says,
// taking nothing, whether AllocateSpecific would succeed.
type IPAllocator interface {
	Allocate(ctx context.Context) (netip.Addr, error)
	AllocateSpecific(ctx context.Context, ip netip.Addr) error
	CheckSpecific(ctx context.Context, ip netip.Addr) error
	Release(ctx context.Context, ip netip.Addr) error
	// CIDR is the range served; its family is the cluster's one family.
	CIDR() netip.Prefix
}

// PortAllocator hands out node ports (allocator.Ports). CheckSpecific says,
// taking nothing, whether AllocateSpecific would succeed.
type PortAllocator interface {
	Allocate(ctx context.Context) (int, error)
	AllocateSpecific(ctx context.Context, port int) error
	CheckSpecific(ctx context.Context, port int) error
	Release(ctx context.Context, port int) error
}

// DryRun returns the Lifecycle of a server-side dry run: it refuses what the
// real write would refuse (a requested cluster IP or node port in use or out
// of range) but takes and releases nothing, as Kubernetes' dry-run
// allocators do. What the write would be given from the range (any free IP
// or port) is left unset: finding it is racy and would show nothing true.
func (l *Lifecycle) DryRun() registry.Lifecycle {
	return &Lifecycle{IPs: dryIPs{l.IPs}, Ports: dryPorts{l.Ports}}
}

// errDryRun marks an allocation from the range that a dry run skips.
var errDryRun = stderrors.New("dry run: nothing allocated")

type dryIPs struct{ real IPAllocator }

func (d dryIPs) Allocate(context.Context) (netip.Addr, error) { return netip.Addr{}, errDryRun }
func (d dryIPs) AllocateSpecific(ctx context.Context, ip netip.Addr) error {
	return d.real.CheckSpecific(ctx, ip)
}
func (d dryIPs) CheckSpecific(ctx context.Context, ip netip.Addr) error {
	return d.real.CheckSpecific(ctx, ip)
}
func (d dryIPs) Release(context.Context, netip.Addr) error { return nil }
func (d dryIPs) CIDR() netip.Prefix                        { return d.real.CIDR() }

type dryPorts struct{ real PortAllocator }

func (d dryPorts) Allocate(context.Context) (int, error) { return 0, errDryRun }
func (d dryPorts) AllocateSpecific(ctx context.Context, port int) error {
	return d.real.CheckSpecific(ctx, port)
}
func (d dryPorts) CheckSpecific(ctx context.Context, port int) error {
	return d.real.CheckSpecific(ctx, port)
}
func (d dryPorts) Release(context.Context, int) error { return nil }

// Lifecycle implements registry.Lifecycle for services.
type Lifecycle struct {
	IPs   IPAllocator
	Ports PortAllocator
}

var serviceKind = schema.GroupKind{Kind: "Service"}

func invalid(svc *corev1.Service, p *field.Path, v any, msg string) error {
	return errors.NewInvalid(serviceKind, svc.Name, field.ErrorList{field.Invalid(p, v, msg)})
}

// undoList collects releases to run later, newest first.
type undoList []func()

func (u undoList) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}

// allocation is one write's registry.Allocation: taken is given back when
// the write does not happen, released is freed once it is stored.
type allocation struct {
	taken    undoList
	released undoList
}

func (a *allocation) Abort()  { a.taken.run() }
func (a *allocation) Commit() { a.released.run() }

func needsNodePorts(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}

// allocatesNodePorts: ports without a node port get one. A LoadBalancer
// with allocateLoadBalancerNodePorts false keeps only those asked for.
func allocatesNodePorts(svc *corev1.Service) bool {
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.AllocateLoadBalancerNodePorts != nil {
		return *svc.Spec.AllocateLoadBalancerNodePorts
	}
	return needsNodePorts(svc)
}

// needsHealthCheckNodePort: a LoadBalancer that keeps client addresses
// (externalTrafficPolicy Local) has a node port its load balancer probes.
func needsHealthCheckNodePort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

func needsClusterIP(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

// BeforeCreate allocates the cluster IP (a requested one, or any free) and
// the node ports of NodePort and LoadBalancer services.
func (l *Lifecycle) BeforeCreate(ctx context.Context, obj runtime.Object) (registry.Allocation, error) {
	a := &allocation{}
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return a, nil
	}
	if err := l.checkFamilies(svc); err != nil {
		return nil, err
	}
	if needsClusterIP(svc) {
		if err := l.takeIP(ctx, svc, &a.taken); err != nil {
			a.Abort()
			return nil, err
		}
	}
	if needsNodePorts(svc) {
		if err := l.takePorts(ctx, svc, nil, &a.taken); err != nil {
			a.Abort()
			return nil, err
		}
	}
	if needsHealthCheckNodePort(svc) {
		if err := l.takeHealthCheckPort(ctx, svc, &a.taken); err != nil {
			a.Abort()
			return nil, err
		}
	}
	return a, nil
}

func (l *Lifecycle) takeIP(ctx context.Context, svc *corev1.Service, undo *undoList) error {
	p := field.NewPath("spec", "clusterIPs").Index(0)
	var ip netip.Addr
	if svc.Spec.ClusterIP == "" {
		a, err := l.IPs.Allocate(ctx)
		if stderrors.Is(err, errDryRun) {
			return nil
		}
		if err != nil {
			return errors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: %w", err))
		}
		ip = a
	} else {
		a, err := netip.ParseAddr(svc.Spec.ClusterIP)
		if err != nil {
			return invalid(svc, p, svc.Spec.ClusterIP, "must be a valid IP address")
		}
		if err := l.IPs.AllocateSpecific(ctx, a); err != nil {
			if !refusal(err) {
				return errors.NewInternalError(err)
			}
			// As Kubernetes, on the whole list (clusterIP mirrors its first).
			ips := svc.Spec.ClusterIPs
			if len(ips) == 0 {
				ips = []string{svc.Spec.ClusterIP}
			}
			return invalid(svc, field.NewPath("spec", "clusterIPs"), ips, fmt.Sprintf("failed to allocate IP %s: %v", a, err))
		}
		ip = a
	}
	*undo = append(*undo, func() { _ = l.IPs.Release(context.WithoutCancel(ctx), ip) })
	svc.Spec.ClusterIP = ip.String()
	svc.Spec.ClusterIPs = []string{ip.String()}
	if len(svc.Spec.IPFamilies) == 0 {
		fam := corev1.IPv4Protocol
		if ip.Is6() {
			fam = corev1.IPv6Protocol
		}
		svc.Spec.IPFamilies = []corev1.IPFamily{fam}
	}
	if svc.Spec.IPFamilyPolicy == nil {
		single := corev1.IPFamilyPolicySingleStack
		svc.Spec.IPFamilyPolicy = &single
	}
	return nil
}

// refusal tells a requested value the allocator refused (taken, out of
// range) from a failure to reach its record.
func refusal(err error) bool {
	return stderrors.Is(err, allocator.ErrAllocated) || stderrors.Is(err, allocator.ErrNotInRange)
}

// takePorts fills node ports: those old already holds stay, others are the
// requested port or any free one. A node port several ports of the Service
// name (53/TCP and 53/UDP may share one) is allocated once. On create, as
// Kubernetes, the ports of one port number share one node port: the one
// asked for on any of them, else one allocated for the first.
func (l *Lifecycle) takePorts(ctx context.Context, svc *corev1.Service, old *corev1.Service, undo *undoList) error {
	held := map[int32]bool{}
	if old != nil && needsNodePorts(old) {
		for _, op := range old.Spec.Ports {
			if op.NodePort != 0 {
				held[op.NodePort] = true
			}
		}
	}
	byPort := map[int32]int32{} // on create: port number -> its node port
	if old == nil {
		for _, port := range svc.Spec.Ports {
			if port.NodePort != 0 && byPort[port.Port] == 0 {
				byPort[port.Port] = port.NodePort
			}
		}
	}
	for i := range svc.Spec.Ports {
		port := &svc.Spec.Ports[i]
		p := field.NewPath("spec", "ports").Index(i).Child("nodePort")
		if port.NodePort == 0 && byPort[port.Port] != 0 && allocatesNodePorts(svc) {
			port.NodePort = byPort[port.Port]
		}
		switch {
		case port.NodePort != 0 && held[port.NodePort]:
			continue
		case port.NodePort != 0:
			if err := l.Ports.AllocateSpecific(ctx, int(port.NodePort)); err != nil {
				if !refusal(err) {
					return errors.NewInternalError(err)
				}
				return invalid(svc, p, port.NodePort, err.Error())
			}
		case !allocatesNodePorts(svc):
			continue
		default:
			n, err := l.Ports.Allocate(ctx)
			if stderrors.Is(err, errDryRun) {
				continue
			}
			if err != nil {
				return errors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: %w", err))
			}
			port.NodePort = int32(n)
			if old == nil {
				byPort[port.Port] = port.NodePort
			}
		}
		held[port.NodePort] = true
		np := int(port.NodePort)
		*undo = append(*undo, func() { _ = l.Ports.Release(context.WithoutCancel(ctx), np) })
	}
	return nil
}

// takeHealthCheckPort gives a LoadBalancer with externalTrafficPolicy Local
// its health check node port: the one asked for, or any free one.
func (l *Lifecycle) takeHealthCheckPort(ctx context.Context, svc *corev1.Service, undo *undoList) error {
	if hc := svc.Spec.HealthCheckNodePort; hc != 0 {
		if err := l.Ports.AllocateSpecific(ctx, int(hc)); err != nil {
			return invalid(svc, field.NewPath("spec", "healthCheckNodePort"), hc,
				fmt.Sprintf("failed to allocate requested HealthCheck NodePort %d: %v", hc, err))
		}
	} else {
		n, err := l.Ports.Allocate(ctx)
		if stderrors.Is(err, errDryRun) {
			return nil
		}
		if err != nil {
			return errors.NewInternalError(fmt.Errorf("failed to allocate a healthCheckNodePort: %w", err))
		}
		svc.Spec.HealthCheckNodePort = int32(n)
	}
	hc := int(svc.Spec.HealthCheckNodePort)
	*undo = append(*undo, func() { _ = l.Ports.Release(context.WithoutCancel(ctx), hc) })
	return nil
}

// PrepareUpdate drops what the Service's new type no longer uses, then keeps
// the cluster IP, the node ports of unchanged ports and the health check node
// port when an update omits them, as clients replacing a Service often do.
func (l *Lifecycle) PrepareUpdate(obj, oldObj runtime.Object) {
	svc, ok1 := obj.(*corev1.Service)
	old, ok2 := oldObj.(*corev1.Service)
	if !ok1 || !ok2 {
		return
	}
	dropTypeDependentFields(svc, old)
	if needsHealthCheckNodePort(svc) && needsHealthCheckNodePort(old) && svc.Spec.HealthCheckNodePort == 0 {
		svc.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	}
	if needsClusterIP(svc) && svc.Spec.ClusterIP == "" && old.Spec.ClusterIP != "" && old.Spec.ClusterIP != corev1.ClusterIPNone {
		switch {
		case len(svc.Spec.ClusterIPs) == 0:
			svc.Spec.ClusterIP = old.Spec.ClusterIP
			svc.Spec.ClusterIPs = append([]string(nil), old.Spec.ClusterIPs...)
		case svc.Spec.ClusterIPs[0] == old.Spec.ClusterIP:
			svc.Spec.ClusterIP = old.Spec.ClusterIP
		}
	}
	if needsNodePorts(svc) && needsNodePorts(old) {
		for i := range svc.Spec.Ports {
			port := &svc.Spec.Ports[i]
			if port.NodePort != 0 {
				continue
			}
			for _, op := range old.Spec.Ports {
				if op.NodePort != 0 && op.Port == port.Port && op.Protocol == port.Protocol {
					port.NodePort = op.NodePort
				}
			}
		}
	}
}

// BeforeUpdate allocates the cluster IP and node ports a validated update
// newly needs (a change of type or of ports). What the old object held and
// the new one does not is released by Commit, after the write is stored.
func (l *Lifecycle) BeforeUpdate(ctx context.Context, obj, oldObj runtime.Object) (registry.Allocation, error) {
	a := &allocation{}
	svc, ok1 := obj.(*corev1.Service)
	old, ok2 := oldObj.(*corev1.Service)
	if !ok1 || !ok2 {
		return a, nil
	}
	if familiesChanged(svc, old) {
		if err := l.checkFamilies(svc); err != nil {
			return nil, err
		}
	}
	if needsClusterIP(svc) && (svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP != old.Spec.ClusterIP) {
		if err := l.takeIP(ctx, svc, &a.taken); err != nil {
			a.Abort()
			return nil, err
		}
	}
	if needsNodePorts(svc) {
		if err := l.takePorts(ctx, svc, old, &a.taken); err != nil {
			a.Abort()
			return nil, err
		}
	}
	oldHC := int32(0)
	if needsHealthCheckNodePort(old) {
		oldHC = old.Spec.HealthCheckNodePort
	}
	if needsHealthCheckNodePort(svc) && (svc.Spec.HealthCheckNodePort == 0 || svc.Spec.HealthCheckNodePort != oldHC) {
		if err := l.takeHealthCheckPort(ctx, svc, &a.taken); err != nil {
			a.Abort()
			return nil, err
		}
	}
	used := map[int32]bool{}
	if needsNodePorts(svc) {
		for _, p := range svc.Spec.Ports {
			used[p.NodePort] = true
		}
	}
	rctx := context.WithoutCancel(ctx)
	if oldHC != 0 && (!needsHealthCheckNodePort(svc) || svc.Spec.HealthCheckNodePort != oldHC) {
		hc := int(oldHC)
		a.released = append(a.released, func() { _ = l.Ports.Release(rctx, hc) })
	}
	if needsNodePorts(old) {
		for _, p := range old.Spec.Ports {
			if p.NodePort != 0 && !used[p.NodePort] {
				np := int(p.NodePort)
				a.released = append(a.released, func() { _ = l.Ports.Release(rctx, np) })
			}
		}
	}
	if old.Spec.ClusterIP != "" && old.Spec.ClusterIP != corev1.ClusterIPNone && old.Spec.ClusterIP != svc.Spec.ClusterIP {
		if ip, err := netip.ParseAddr(old.Spec.ClusterIP); err == nil {
			a.released = append(a.released, func() { _ = l.IPs.Release(rctx, ip) })
		}
	}
	return a, nil
}

// AfterDelete releases the service's cluster IPs and node ports.
func (l *Lifecycle) AfterDelete(ctx context.Context, obj runtime.Object) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return
	}
	ctx = context.WithoutCancel(ctx)
	for _, s := range svc.Spec.ClusterIPs {
		if ip, err := netip.ParseAddr(s); err == nil {
			_ = l.IPs.Release(ctx, ip)
		}
	}
	if len(svc.Spec.ClusterIPs) == 0 && svc.Spec.ClusterIP != "" {
		if ip, err := netip.ParseAddr(svc.Spec.ClusterIP); err == nil {
			_ = l.IPs.Release(ctx, ip)
		}
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			_ = l.Ports.Release(ctx, int(p.NodePort))
		}
	}
	if svc.Spec.HealthCheckNodePort != 0 {
		_ = l.Ports.Release(ctx, int(svc.Spec.HealthCheckNodePort))
	}
}
