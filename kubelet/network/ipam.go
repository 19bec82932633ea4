package network

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// ErrPoolExhausted means every address of the pod CIDR is in use.
var ErrPoolExhausted = errors.New("network: no free address in the pod CIDR")

// allocator hands out IPv4 addresses of one CIDR. Its state is a directory
// with one file per address in use, named after the address and holding the
// owner's ID, plus "last" (the most recently issued address, so a released
// address is not reissued at once while stale connections may still target
// it). Creating the file with O_EXCL is the reservation, so two allocators on
// the same directory never issue one address twice.
type allocator struct {
	mu      sync.Mutex
	dir     string
	subnet  *net.IPNet
	gateway net.IP
}

func newAllocator(dir string, subnet *net.IPNet, gateway net.IP) (*allocator, error) {
	if subnet.IP.To4() == nil {
		return nil, fmt.Errorf("network: pod CIDR %s: only IPv4 is supported", subnet)
	}
	if ones, bits := subnet.Mask.Size(); bits-ones < 2 {
		return nil, fmt.Errorf("network: pod CIDR %s is too small for a gateway and a pod", subnet)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("network: address state directory: %w", err)
	}
	return &allocator{dir: dir, subnet: subnet, gateway: gateway.To4()}, nil
}

func ipToUint(ip net.IP) uint32 { return binary.BigEndian.Uint32(ip.To4()) }
func uintToIP(v uint32) net.IP  { ip := make(net.IP, 4); binary.BigEndian.PutUint32(ip, v); return ip }

// hostRange is the first and last usable host address (network and
// broadcast addresses excluded).
func (a *allocator) hostRange() (first, last uint32) {
	ones, bits := a.subnet.Mask.Size()
	base := ipToUint(a.subnet.IP.Mask(a.subnet.Mask))
	size := uint32(1) << uint(bits-ones)
	return base + 1, base + size - 2
}

// Lookup returns the address held by id, or nil.
func (a *allocator) Lookup(id string) (net.IP, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lookup(id)
}

func (a *allocator) lookup(id string) (net.IP, error) {
	held, err := a.list()
	if err != nil {
		return nil, err
	}
	for ip, owner := range held {
		if owner == id {
			return net.ParseIP(ip).To4(), nil
		}
	}
	return nil, nil
}

// List returns every address in use and its owner.
func (a *allocator) List() (map[string]string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.list()
}

func (a *allocator) list() (map[string]string, error) {
	entries, err := os.ReadDir(a.dir)
	if err != nil {
		return nil, fmt.Errorf("network: read address state: %w", err)
	}
	held := map[string]string{}
	for _, e := range entries {
		ip := net.ParseIP(e.Name())
		if ip == nil || e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(a.dir, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("network: read address state: %w", err)
		}
		held[ip.String()] = strings.TrimSpace(string(b))
	}
	return held, nil
}

// Allocate returns the address held by id, or reserves the next free one
// after the last issued.
func (a *allocator) Allocate(id string) (net.IP, error) {
	if id == "" || strings.ContainsAny(id, "/\n") {
		return nil, fmt.Errorf("network: bad pod ID %q", id)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if ip, err := a.lookup(id); err != nil || ip != nil {
		return ip, err
	}
	first, last := a.hostRange()
	start := first
	if b, err := os.ReadFile(filepath.Join(a.dir, "last")); err == nil {
		if ip := net.ParseIP(strings.TrimSpace(string(b))); ip != nil && a.subnet.Contains(ip) {
			if v := ipToUint(ip); v >= first && v < last {
				start = v + 1
			}
		}
	}
	gw := ipToUint(a.gateway)
	n := last - first + 1
	for i := uint32(0); i < n; i++ {
		v := first + (start-first+i)%n
		if v == gw {
			continue
		}
		ip := uintToIP(v)
		f, err := os.OpenFile(filepath.Join(a.dir, ip.String()), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("network: reserve %s: %w", ip, err)
		}
		_, werr := f.WriteString(id)
		cerr := f.Close()
		if werr != nil || cerr != nil {
			os.Remove(f.Name())
			return nil, fmt.Errorf("network: reserve %s: %w", ip, errors.Join(werr, cerr))
		}
		if err := os.WriteFile(filepath.Join(a.dir, "last"), []byte(ip.String()), 0o600); err != nil {
			return nil, fmt.Errorf("network: record last address: %w", err)
		}
		return ip, nil
	}
	return nil, fmt.Errorf("%w %s", ErrPoolExhausted, a.subnet)
}

// ErrAddressInUse means another pod holds the requested address.
var ErrAddressInUse = errors.New("network: address in use by another pod")

// Reserve records ip as held by id, for callers that choose addresses
// themselves. It fails if ip is outside the pod range, is the gateway, or is
// held by another pod, and if id already holds a different address.
func (a *allocator) Reserve(id string, ip net.IP) error {
	if id == "" || strings.ContainsAny(id, "/\n") {
		return fmt.Errorf("network: bad pod ID %q", id)
	}
	ip4 := ip.To4()
	first, last := a.hostRange()
	if ip4 == nil || !a.subnet.Contains(ip4) || ipToUint(ip4) < first || ipToUint(ip4) > last || ip4.Equal(a.gateway) {
		return fmt.Errorf("network: %s is not a pod address of %s", ip, a.subnet)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// Every sync of a running pod reserves its address again: one read
	// answers that, where listing costs a read per pod on the node.
	if b, err := os.ReadFile(filepath.Join(a.dir, ip4.String())); err == nil && strings.TrimSpace(string(b)) == id {
		return nil
	}
	held, err := a.list()
	if err != nil {
		return err
	}
	for addr, owner := range held {
		switch {
		case addr == ip4.String() && owner == id:
			return nil
		case addr == ip4.String():
			return fmt.Errorf("%w: %s is held by %s", ErrAddressInUse, ip4, owner)
		case owner == id:
			return fmt.Errorf("network: pod %s already holds %s, not %s", id, addr, ip4)
		}
	}
	f, err := os.OpenFile(filepath.Join(a.dir, ip4.String()), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s", ErrAddressInUse, ip4)
	}
	if err != nil {
		return fmt.Errorf("network: reserve %s: %w", ip4, err)
	}
	_, werr := f.WriteString(id)
	if cerr := f.Close(); werr != nil || cerr != nil {
		os.Remove(f.Name())
		return fmt.Errorf("network: reserve %s: %w", ip4, errors.Join(werr, cerr))
	}
	return nil
}

// Release frees every address held by id. Releasing nothing is not an error.
func (a *allocator) Release(id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	held, err := a.list()
	if err != nil {
		return err
	}
	for ip, owner := range held {
		if owner != id {
			continue
		}
		if err := os.Remove(filepath.Join(a.dir, ip)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("network: release %s: %w", ip, err)
		}
	}
	return nil
}
