package network

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
)

// Defaults for Config's zero values.
const (
	DefaultBridge      = "skiff0"
	DefaultNetnsPrefix = "skiff-"
	DefaultMTU         = 1500
	netnsDir           = "/var/run/netns"
)

// Config describes the node's pod network.
type Config struct {
	// PodCIDR is the node's pod range ("10.42.0.0/24"); its first host
	// address is the bridge's (the pods' gateway).
	PodCIDR string
	// StateDir keeps the address allocations (required).
	StateDir string
	// Bridge is the node bridge's name (default skiff0).
	Bridge string
	// NetnsPrefix starts every pod namespace's name (default "skiff-").
	NetnsPrefix string
	// MTU of the bridge and veths (default 1500).
	MTU    int
	Logger *slog.Logger
}

// Pod is one pod's network as SetUp left it.
type Pod struct {
	ID string
	// NetnsPath is the namespace's bind mount, what containers join.
	NetnsPath string
	IP        net.IP
	// PrefixLen is the pod CIDR's prefix length.
	PrefixLen int
	Gateway   net.IP
	// HostVeth is the host end of the pod's veth pair.
	HostVeth string
}

// settings is Config validated and defaulted.
type settings struct {
	subnet      *net.IPNet
	gateway     net.IP
	stateDir    string
	bridge      string
	netnsPrefix string
	mtu         int
	log         *slog.Logger
}

func (c Config) validate() (settings, error) {
	s := settings{
		stateDir:    c.StateDir,
		bridge:      c.Bridge,
		netnsPrefix: c.NetnsPrefix,
		mtu:         c.MTU,
		log:         c.Logger,
	}
	ip, subnet, err := net.ParseCIDR(c.PodCIDR)
	if err != nil {
		return s, fmt.Errorf("network: pod CIDR %q: %w", c.PodCIDR, err)
	}
	if ip.To4() == nil {
		return s, fmt.Errorf("network: pod CIDR %q: only IPv4 is supported", c.PodCIDR)
	}
	s.subnet = subnet
	s.gateway = uintToIP(ipToUint(subnet.IP.Mask(subnet.Mask)) + 1)
	if s.stateDir == "" {
		return s, errors.New("network: StateDir is required")
	}
	if s.bridge == "" {
		s.bridge = DefaultBridge
	}
	if len(s.bridge) > 15 {
		return s, fmt.Errorf("network: bridge name %q is longer than 15 characters", s.bridge)
	}
	if s.netnsPrefix == "" {
		s.netnsPrefix = DefaultNetnsPrefix
	}
	if s.mtu == 0 {
		s.mtu = DefaultMTU
	}
	if s.mtu < 576 || s.mtu > 65535 {
		return s, fmt.Errorf("network: MTU %d out of range 576-65535", s.mtu)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// validPodID keeps IDs usable as file and namespace names.
func validPodID(id string) error {
	if id == "" || len(id) > 200 {
		return fmt.Errorf("network: pod ID %q: want 1-200 characters", id)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("network: pod ID %q: only letters, digits, '-', '_' and '.' are allowed", id)
		}
	}
	return nil
}

// hostVethName derives a stable interface name (at most 15 bytes) from the
// pod ID, so TearDown finds the link after a restart without any state.
func hostVethName(podID string) string {
	sum := sha256.Sum256([]byte(podID))
	return "veth" + hex.EncodeToString(sum[:])[:11]
}

func (s settings) netnsName(podID string) string { return s.netnsPrefix + podID }

// NetnsPath is where the pod's network namespace is (or would be) mounted.
func (m *Manager) NetnsPath(podID string) string { return m.s.netnsPath(podID) }

func (s settings) netnsPath(podID string) string {
	return filepath.Join(netnsDir, s.netnsName(podID))
}
