package allocator

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/netip"

	"github.com/skiffkube/skiff/storage"
)

// Keys of the ranges in the store (the names Kubernetes uses in etcd).
const (
	ServiceIPsKey       = "/registry/ranges/serviceips"
	ServiceNodePortsKey = "/registry/ranges/servicenodeports"
)

// Default ranges.
const (
	DefaultServiceCIDR   = "10.43.0.0/16"
	DefaultNodePortRange = "30000-32767"
)

// IPs allocates ClusterIPs from a CIDR. The network address and the
// broadcast address (for IPv4) are never handed out; the first usable address
// is reserved for the "kubernetes" Service, as Kubernetes does.
type IPs struct {
	prefix netip.Prefix
	first  netip.Addr // offset 0
	b      *bitmap
}

// NewIPs returns the allocator for cidr (IPv4 or IPv6, at most 2^20
// addresses are used of a larger range).
func NewIPs(store *storage.Store, cidr string) (*IPs, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("invalid service CIDR %q: %w", cidr, err)
	}
	p = p.Masked()
	hostBits := p.Addr().BitLen() - p.Bits()
	if hostBits < 2 {
		return nil, fmt.Errorf("service CIDR %s is too small: it needs at least 4 addresses", cidr)
	}
	size := 1 << min(hostBits, 20)
	size -= 1 // the network address
	if p.Addr().Is4() && hostBits <= 20 {
		size -= 1 // the broadcast address
	}
	return &IPs{prefix: p, first: p.Addr().Next(), b: newBitmap(store, ServiceIPsKey, p.String(), size)}, nil
}

// CIDR is the range served.
func (a *IPs) CIDR() netip.Prefix { return a.prefix }

// First is the first usable address (the "kubernetes" Service's).
func (a *IPs) First() netip.Addr { return a.first }

func (a *IPs) offset(ip netip.Addr) (int, bool) {
	if !a.prefix.Contains(ip) {
		return 0, false
	}
	d := new(big.Int).Sub(new(big.Int).SetBytes(ip.AsSlice()), new(big.Int).SetBytes(a.first.AsSlice()))
	if d.Sign() < 0 || !d.IsInt64() || d.Int64() >= int64(a.b.size) {
		return 0, false
	}
	return int(d.Int64()), true
}

func (a *IPs) addr(offset int) netip.Addr {
	n := new(big.Int).Add(new(big.Int).SetBytes(a.first.AsSlice()), big.NewInt(int64(offset)))
	buf := n.FillBytes(make([]byte, a.first.BitLen()/8))
	ip, _ := netip.AddrFromSlice(buf)
	return ip
}

// Allocate takes any free address.
func (a *IPs) Allocate(ctx context.Context) (netip.Addr, error) {
	o, err := a.b.allocateAny(ctx)
	if err != nil {
		if err == ErrFull {
			// The Service registry says what failed ("failed to allocate a serviceIP: ").
			return netip.Addr{}, fmt.Errorf("%w: no IP addresses left in %s", err, a.prefix)
		}
		return netip.Addr{}, err
	}
	return a.addr(o), nil
}

// AllocateSpecific takes ip if it is in range and free.
// Its refusals read as Kubernetes' range allocator's, which the Service
// registry puts after "failed to allocate IP <ip>: ".
func (a *IPs) AllocateSpecific(ctx context.Context, ip netip.Addr) error {
	o, err := a.inRange(ip)
	if err != nil {
		return err
	}
	if err := a.b.allocate(ctx, o); err != nil {
		if errors.Is(err, ErrAllocated) {
			return errIPTaken
		}
		return fmt.Errorf("allocate IP %s: %w", ip, err)
	}
	return nil
}

// CheckSpecific tells, taking nothing, whether AllocateSpecific(ip) would
// succeed: nil if ip is in range and free, else AllocateSpecific's error.
func (a *IPs) CheckSpecific(ctx context.Context, ip netip.Addr) error {
	o, err := a.inRange(ip)
	if err != nil {
		return err
	}
	taken, err := a.b.isAllocated(ctx, o)
	if err != nil {
		return fmt.Errorf("allocate IP %s: %w", ip, err)
	}
	if taken {
		return errIPTaken
	}
	return nil
}

// inRange is ip's offset in the range, or AllocateSpecific's refusal of an
// IP outside it.
func (a *IPs) inRange(ip netip.Addr) (int, error) {
	o, ok := a.offset(ip)
	if !ok {
		return 0, said(ErrNotInRange, "the provided IP (%s) is not in the valid range. The range of valid IPs is %s", ip, a.prefix)
	}
	return o, nil
}

// Release frees ip; addresses outside the range are ignored.
func (a *IPs) Release(ctx context.Context, ip netip.Addr) error {
	o, ok := a.offset(ip)
	if !ok {
		return nil
	}
	return a.b.release(ctx, o)
}

// Allocated tells whether ip is in use.
func (a *IPs) Allocated(ctx context.Context, ip netip.Addr) (bool, error) {
	o, ok := a.offset(ip)
	if !ok {
		return false, nil
	}
	return a.b.isAllocated(ctx, o)
}

// Ports allocates NodePorts from an inclusive range such as 30000-32767.
type Ports struct {
	base, max int
	b         *bitmap
}

// NewPorts returns the allocator for a "from-to" range.
func NewPorts(store *storage.Store, rng string) (*Ports, error) {
	var lo, hi int
	if _, err := fmt.Sscanf(rng, "%d-%d", &lo, &hi); err != nil || lo < 1 || hi > 65535 || lo > hi {
		return nil, fmt.Errorf("invalid node port range %q: want FROM-TO within 1-65535, e.g. %s", rng, DefaultNodePortRange)
	}
	return &Ports{base: lo, max: hi, b: newBitmap(store, ServiceNodePortsKey, fmt.Sprintf("%d-%d", lo, hi), hi-lo+1)}, nil
}

// Allocate takes any free port.
func (p *Ports) Allocate(ctx context.Context) (int, error) {
	o, err := p.b.allocateAny(ctx)
	if err != nil {
		if err == ErrFull {
			return 0, fmt.Errorf("%w: no ports left in %d-%d", err, p.base, p.max)
		}
		return 0, err
	}
	return p.base + o, nil
}

// AllocateSpecific takes port if it is in range and free; its refusals read
// as Kubernetes' port allocator's.
func (p *Ports) AllocateSpecific(ctx context.Context, port int) error {
	if err := p.inRange(port); err != nil {
		return err
	}
	if err := p.b.allocate(ctx, port-p.base); err != nil {
		if errors.Is(err, ErrAllocated) {
			return errPortTaken
		}
		return fmt.Errorf("allocate node port %d: %w", port, err)
	}
	return nil
}

// CheckSpecific tells, taking nothing, whether AllocateSpecific(port) would
// succeed: nil if port is in range and free, else AllocateSpecific's error.
func (p *Ports) CheckSpecific(ctx context.Context, port int) error {
	if err := p.inRange(port); err != nil {
		return err
	}
	taken, err := p.b.isAllocated(ctx, port-p.base)
	if err != nil {
		return fmt.Errorf("allocate node port %d: %w", port, err)
	}
	if taken {
		return errPortTaken
	}
	return nil
}

// inRange is AllocateSpecific's refusal of a port outside the range, or nil.
func (p *Ports) inRange(port int) error {
	if port < p.base || port > p.max {
		return said(ErrNotInRange, "provided port is not in the valid range. The range of valid ports is %d-%d", p.base, p.max)
	}
	return nil
}

// Release frees port; ports outside the range are ignored.
func (p *Ports) Release(ctx context.Context, port int) error {
	return p.b.release(ctx, port-p.base)
}

// saidError is a refusal worded for users that still matches its sentinel
// (ErrAllocated, ErrNotInRange) with errors.Is.
type saidError struct {
	msg string
	err error
}

func (e *saidError) Error() string { return e.msg }
func (e *saidError) Unwrap() error { return e.err }

// The refusals of a taken IP or port, in Kubernetes' allocators' words.
var (
	errIPTaken   = said(ErrAllocated, "provided IP is already allocated")
	errPortTaken = said(ErrAllocated, "provided port is already allocated")
)

func said(sentinel error, format string, args ...any) error {
	return &saidError{msg: fmt.Sprintf(format, args...), err: sentinel}
}
