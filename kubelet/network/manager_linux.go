//go:build linux

package network

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Manager sets up and tears down pod networks on this node.
type Manager struct {
	s     settings
	alloc *allocator

	// made holds the pods this Manager set up (or found set up) since it
	// started. The agent calls SetUp on every sync of a running pod; as
	// the kubelet runs CNI ADD once per sandbox, not per sync, a pod found
	// here costs one stat of its namespace instead of netlink round trips
	// into it.
	mu   sync.Mutex
	made map[string]Pod
}

// New validates cfg and opens the address state. It changes nothing on the
// host; EnsureBridge does.
func New(cfg Config) (*Manager, error) {
	s, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	ipamDir := filepath.Join(s.stateDir, "ipam", strings.ReplaceAll(s.subnet.String(), "/", "_"))
	alloc, err := newAllocator(ipamDir, s.subnet, s.gateway)
	if err != nil {
		return nil, err
	}
	return &Manager{s: s, alloc: alloc, made: map[string]Pod{}}, nil
}

// Gateway is the bridge's address, the pods' default route.
func (m *Manager) Gateway() net.IP { return m.s.gateway }

// Bridge is the node bridge's name.
func (m *Manager) Bridge() string { return m.s.bridge }

// EnsureBridge creates the node bridge with the gateway address if missing,
// brings it up and turns on IPv4 forwarding.
func (m *Manager) EnsureBridge(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	link, err := netlink.LinkByName(m.s.bridge)
	var notFound netlink.LinkNotFoundError
	switch {
	case errors.As(err, &notFound):
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: m.s.bridge, MTU: m.s.mtu}}
		if err := netlink.LinkAdd(br); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("network: create bridge %s: %w", m.s.bridge, err)
		}
		if link, err = netlink.LinkByName(m.s.bridge); err != nil {
			return fmt.Errorf("network: find bridge %s: %w", m.s.bridge, err)
		}
		m.s.log.Info("created pod bridge", "bridge", m.s.bridge, "gateway", m.s.gateway)
	case err != nil:
		return fmt.Errorf("network: find bridge %s: %w", m.s.bridge, err)
	case link.Type() != "bridge":
		return fmt.Errorf("network: %s exists but is a %s, not a bridge", m.s.bridge, link.Type())
	}
	ones, _ := m.s.subnet.Mask.Size()
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: m.s.gateway, Mask: net.CIDRMask(ones, 32)}}
	if err := netlink.AddrReplace(link, addr); err != nil {
		return fmt.Errorf("network: address %s on %s: %w", addr.IPNet, m.s.bridge, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("network: bring up %s: %w", m.s.bridge, err)
	}
	return enableIPForward()
}

// enableIPForward turns on net.ipv4.ip_forward; without it pod traffic is
// not forwarded past the node.
func enableIPForward() error {
	const p = "/proc/sys/net/ipv4/ip_forward"
	if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) == "1" {
		return nil
	}
	if err := os.WriteFile(p, []byte("1"), 0o644); err != nil {
		return fmt.Errorf("network: enable ip_forward: %w", err)
	}
	return nil
}

// RemoveBridge deletes the node bridge (for node teardown and tests).
func (m *Manager) RemoveBridge(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	link, err := netlink.LinkByName(m.s.bridge)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("network: find bridge %s: %w", m.s.bridge, err)
	}
	if err := netlink.LinkDel(link); err != nil {
		return fmt.Errorf("network: delete bridge %s: %w", m.s.bridge, err)
	}
	return nil
}

// SetUp gives the pod its namespace, veth, an address from the pod CIDR and
// a default route. Calling it again for a pod that is already set up returns
// the same network.
func (m *Manager) SetUp(ctx context.Context, podID string) (*Pod, error) {
	return m.setUp(ctx, podID, nil)
}

// SetUpWithIP is SetUp with an address the caller chose (an agent that
// assigns pod IPs itself); it fails with ErrAddressInUse if another pod of
// this node holds it.
func (m *Manager) SetUpWithIP(ctx context.Context, podID string, ip net.IP) (*Pod, error) {
	if ip == nil {
		return nil, errors.New("network: SetUpWithIP needs an address")
	}
	return m.setUp(ctx, podID, ip)
}

func (m *Manager) setUp(ctx context.Context, podID string, want net.IP) (pod *Pod, err error) {
	if err := validPodID(podID); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	made, ok := m.made[podID]
	m.mu.Unlock()
	if ok && (want == nil || want.Equal(made.IP)) {
		if _, err := os.Stat(made.NetnsPath); err == nil {
			return &made, nil
		}
	}
	bridge, err := netlink.LinkByName(m.s.bridge)
	if err != nil {
		return nil, fmt.Errorf("network: bridge %s (call EnsureBridge first): %w", m.s.bridge, err)
	}
	ip := want.To4()
	if want != nil {
		if err := m.alloc.Reserve(podID, want); err != nil {
			return nil, err
		}
	} else if ip, err = m.alloc.Allocate(podID); err != nil {
		return nil, err
	}
	// A half-made network is worse than none: undo on failure so that the
	// next attempt starts clean.
	defer func() {
		if err != nil {
			if terr := m.TearDown(context.WithoutCancel(ctx), podID); terr != nil {
				m.s.log.Warn("undo failed pod network set-up", "pod", podID, "err", terr)
			}
		}
	}()

	ns, err := m.ensureNetns(podID)
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	nsh, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("network: netlink in pod namespace: %w", err)
	}
	defer nsh.Close()

	hostName := hostVethName(podID)
	if err := m.ensureVeth(bridge, hostName, nsh, ns); err != nil {
		return nil, err
	}
	ones, _ := m.s.subnet.Mask.Size()
	if err := configurePodSide(nsh, &net.IPNet{IP: ip, Mask: net.CIDRMask(ones, 32)}, m.s.gateway); err != nil {
		return nil, err
	}
	pod = &Pod{
		ID:        podID,
		NetnsPath: m.s.netnsPath(podID),
		IP:        ip,
		PrefixLen: ones,
		Gateway:   m.s.gateway,
		HostVeth:  hostName,
	}
	m.mu.Lock()
	m.made[podID] = *pod
	m.mu.Unlock()
	return pod, nil
}

// ensureNetns opens the pod's named namespace, creating it if needed.
func (m *Manager) ensureNetns(podID string) (netns.NsHandle, error) {
	path := m.s.netnsPath(podID)
	if ns, err := netns.GetFromPath(path); err == nil {
		return ns, nil
	}
	// A leftover file that is not a namespace mount (a crash between create
	// and mount) would make NewNamed fail; remove it first.
	if _, err := os.Stat(path); err == nil {
		_ = unix.Unmount(path, unix.MNT_DETACH)
		if err := os.Remove(path); err != nil {
			return netns.None(), fmt.Errorf("network: remove stale %s: %w", path, err)
		}
	}
	return newNamedNetns(m.s.netnsName(podID))
}

// newNamedNetns creates a named namespace. Creating one switches the calling
// thread into it, so this runs on a locked thread that switches back; if it
// cannot, the thread stays locked and Go discards it when the goroutine ends.
func newNamedNetns(name string) (netns.NsHandle, error) {
	type result struct {
		ns  netns.NsHandle
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{netns.None(), fmt.Errorf("network: current namespace: %w", err)}
			return
		}
		defer orig.Close()
		ns, err := netns.NewNamed(name)
		if serr := netns.Set(orig); serr != nil {
			// Keep the thread locked: it must not run other goroutines.
			done <- result{netns.None(), fmt.Errorf("network: return to host namespace: %w", serr)}
			return
		}
		runtime.UnlockOSThread()
		if err != nil {
			done <- result{netns.None(), fmt.Errorf("network: create namespace %s: %w", name, err)}
			return
		}
		done <- result{ns, nil}
	}()
	r := <-done
	return r.ns, r.err
}

// ensureVeth creates the pair with its peer born inside the pod namespace
// as eth0, unless the host end already exists.
func (m *Manager) ensureVeth(bridge netlink.Link, hostName string, nsh *netlink.Handle, ns netns.NsHandle) error {
	host, err := netlink.LinkByName(hostName)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		veth := &netlink.Veth{
			LinkAttrs:     netlink.LinkAttrs{Name: hostName, MTU: m.s.mtu, MasterIndex: bridge.Attrs().Index},
			PeerName:      "eth0",
			PeerNamespace: netlink.NsFd(int(ns)),
		}
		if err := netlink.LinkAdd(veth); err != nil {
			return fmt.Errorf("network: create veth %s: %w", hostName, err)
		}
		if host, err = netlink.LinkByName(hostName); err != nil {
			return fmt.Errorf("network: find veth %s: %w", hostName, err)
		}
	} else if err != nil {
		return fmt.Errorf("network: find veth %s: %w", hostName, err)
	} else if _, err := nsh.LinkByName("eth0"); err != nil {
		// The host end survived but its peer is not in this namespace
		// (the namespace was recreated): start the pair again.
		if err := netlink.LinkDel(host); err != nil {
			return fmt.Errorf("network: delete stale veth %s: %w", hostName, err)
		}
		return m.ensureVeth(bridge, hostName, nsh, ns)
	}
	if host.Attrs().MasterIndex != bridge.Attrs().Index {
		if err := netlink.LinkSetMaster(host, bridge); err != nil {
			return fmt.Errorf("network: attach %s to %s: %w", hostName, m.s.bridge, err)
		}
	}
	if err := netlink.LinkSetUp(host); err != nil {
		return fmt.Errorf("network: bring up %s: %w", hostName, err)
	}
	return nil
}

// configurePodSide brings up lo and eth0, sets eth0's address and the
// default route via the gateway.
func configurePodSide(nsh *netlink.Handle, addr *net.IPNet, gateway net.IP) error {
	lo, err := nsh.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("network: pod lo: %w", err)
	}
	if err := nsh.LinkSetUp(lo); err != nil {
		return fmt.Errorf("network: bring up pod lo: %w", err)
	}
	eth0, err := nsh.LinkByName("eth0")
	if err != nil {
		return fmt.Errorf("network: pod eth0: %w", err)
	}
	if err := nsh.AddrReplace(eth0, &netlink.Addr{IPNet: addr}); err != nil {
		return fmt.Errorf("network: address %s on pod eth0: %w", addr, err)
	}
	if err := nsh.LinkSetUp(eth0); err != nil {
		return fmt.Errorf("network: bring up pod eth0: %w", err)
	}
	route := &netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: gateway, Dst: nil}
	if err := nsh.RouteReplace(route); err != nil {
		return fmt.Errorf("network: default route via %s: %w", gateway, err)
	}
	return nil
}

// TearDown removes the pod's veth, namespace and address. Missing pieces are
// not errors, so it can finish a teardown that a crash interrupted.
func (m *Manager) TearDown(ctx context.Context, podID string) error {
	if err := validPodID(podID); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.made, podID)
	m.mu.Unlock()
	var errs []error
	// Deleting the host end deletes its peer too.
	if link, err := netlink.LinkByName(hostVethName(podID)); err == nil {
		if err := netlink.LinkDel(link); err != nil {
			errs = append(errs, fmt.Errorf("network: delete veth: %w", err))
		}
	}
	path := m.s.netnsPath(podID)
	if _, err := os.Stat(path); err == nil {
		if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("network: unmount %s: %w", path, err))
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("network: remove %s: %w", path, err))
		}
	}
	if err := m.alloc.Release(podID); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Get returns the pod's network if SetUp made one, or nil.
func (m *Manager) Get(podID string) (*Pod, error) {
	if err := validPodID(podID); err != nil {
		return nil, err
	}
	ip, err := m.alloc.Lookup(podID)
	if err != nil || ip == nil {
		return nil, err
	}
	ones, _ := m.s.subnet.Mask.Size()
	return &Pod{ID: podID, NetnsPath: m.s.netnsPath(podID), IP: ip, PrefixLen: ones, Gateway: m.s.gateway, HostVeth: hostVethName(podID)}, nil
}

// Pods lists the IDs of every pod that holds an address or a namespace
// here, so the agent can tear down those whose pod is gone.
func (m *Manager) Pods() ([]string, error) {
	held, err := m.alloc.List()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, id := range held {
		seen[id] = true
	}
	entries, err := os.ReadDir(netnsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("network: list namespaces: %w", err)
	}
	for _, e := range entries {
		if id, ok := strings.CutPrefix(e.Name(), m.s.netnsPrefix); ok && validPodID(id) == nil {
			seen[id] = true
		}
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	return ids, nil
}
