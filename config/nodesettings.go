package config

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/skiffkube/skiff/controllers/nodeipam"
	"github.com/skiffkube/skiff/controllers/nodelifecycle"
)

// CheckNodeSettings refuses the node controllers' settings that are only
// wrong together: a --cluster-cidr that --node-cidr-mask-size cannot split,
// a Service range (serviceCIDR, set by the flag serviceFlag; "" for none)
// that holds all of it, and eviction rates and thresholds
// (nodelifecycle.Eviction.Check). The error names the settings, so the
// server and skiff controller-manager report it alike.
func CheckNodeSettings(clusterCIDR string, nodeCIDRMaskSize int, serviceCIDR, serviceFlag string, eviction nodelifecycle.Eviction) error {
	if err := nodeipam.CheckCIDRs(clusterCIDR, nodeCIDRMaskSize, ""); err != nil {
		return fmt.Errorf("invalid --%s %s with --%s %d: %w", keyClusterCIDR, clusterCIDR, keyNodeCIDRMaskSize, nodeCIDRMaskSize, err)
	}
	if err := nodeipam.CheckCIDRs(clusterCIDR, nodeCIDRMaskSize, serviceCIDR); err != nil {
		return fmt.Errorf("invalid --%s %s with --%s %s: %w", serviceFlag, serviceCIDR, keyClusterCIDR, clusterCIDR, err)
	}
	if err := eviction.Check(); err != nil {
		return fmt.Errorf("invalid %w", err)
	}
	return nil
}

// ParseClusterCIDR reads --cluster-cidr: one IPv4 CIDR of /8 to /29, in
// canonical form. kube-controller-manager also takes an IPv4,IPv6 pair;
// skiff's node agent builds an IPv4-only pod network, so a pair or an IPv6
// range is refused with that reason rather than as a malformed value.
func ParseClusterCIDR(v string) (string, error) {
	return parseIPv4CIDR(v, 8, 29, "10.42.0.0/16", "pod CIDRs", "skiff's pod network is IPv4 only")
}

// ParseServiceCIDR reads --service-cidr (the server) and
// --service-cluster-ip-range (skiff controller-manager): one IPv4 CIDR of
// /12 to /28, in canonical form.
func ParseServiceCIDR(v string) (string, error) {
	return parseIPv4CIDR(v, 12, 28, "10.43.0.0/16", "Service CIDRs", "skiff's Service IPs are IPv4 only")
}

func parseIPv4CIDR(v string, minBits, maxBits int, example, what, why string) (string, error) {
	v = strings.TrimSpace(v)
	if strings.Contains(v, ",") {
		return "", fmt.Errorf("dual-stack %s are not supported (%s): give one IPv4 CIDR such as %s", what, why, example)
	}
	p, err := netip.ParsePrefix(v)
	if err != nil {
		return "", fmt.Errorf("must be an IPv4 CIDR such as %s", example)
	}
	if !p.Addr().Is4() {
		return "", fmt.Errorf("must be an IPv4 CIDR such as %s (%s)", example, why)
	}
	if p.Bits() < minBits || p.Bits() > maxBits {
		return "", fmt.Errorf("prefix length must be between /%d and /%d", minBits, maxBits)
	}
	return p.Masked().String(), nil
}
