package nodeipam

import (
	"errors"
	"fmt"
	"math/big"
	"net"
)

// ErrExhausted means every subnet of the cluster CIDR is in use.
var ErrExhausted = errors.New("nodeipam: cluster CIDR exhausted")

// allocator hands out fixed-size subnets of one CIDR. It is not safe for concurrent use; the controller
// serialises calls.
type allocator struct {
	base     *net.IPNet
	maskSize int
	count    int
	used     map[int]string   // subnet index → node
	byNode   map[string][]int // node → the subnets it holds (more than one when its CIDR is shorter than ours)
	next     int              // where the search starts, so released subnets are not reused at once
	service  string           // the Service IP range, for messages; "" if none was given
	label    string           // the cluster CIDR, the metrics' clusterCIDR label
}

// serviceRange owns the subnets the Service IP range overlaps, so that they are never handed out (as
// kube-controller-manager carves --service-cluster-ip-range out of the cluster CIDR). No node can have
// this name: node names are DNS subdomains.
const serviceRange = "<Service IP range>"

// maxSubnetBits bounds the subnets of a cluster CIDR at 2^20: each is a map entry while in use.
const maxSubnetBits = 20

// CheckCIDRs refuses a cluster CIDR and node mask size the controller cannot split: the mask must be
// longer than the cluster CIDR's, leave a node room for its pods' gateway and at least one pod (the
// node agent's bridge takes the first address), and give at most 2^20 subnets. It refuses a Service
// range ("" for none) that holds the whole cluster CIDR too: every node would wait for a pod CIDR.
func CheckCIDRs(clusterCIDR string, maskSize int, serviceCIDR string) error {
	base, err := parseCIDRs(clusterCIDR, maskSize)
	if err != nil {
		return err
	}
	_, err = parseServiceCIDR(base, serviceCIDR)
	return err
}

func parseServiceCIDR(base *net.IPNet, serviceCIDR string) (*net.IPNet, error) {
	if serviceCIDR == "" {
		return nil, nil
	}
	_, svc, err := net.ParseCIDR(serviceCIDR)
	if err != nil {
		return nil, fmt.Errorf("Service range %q: %w", serviceCIDR, err)
	}
	ones, _ := svc.Mask.Size()
	baseOnes, _ := base.Mask.Size()
	if len(svc.IP) == len(base.IP) && ones <= baseOnes && svc.Contains(base.IP) {
		return nil, fmt.Errorf("the Service range %s holds all of the cluster CIDR %s: no pod CIDR would be left", svc, base)
	}
	return svc, nil
}

func parseCIDRs(clusterCIDR string, maskSize int) (*net.IPNet, error) {
	_, base, err := net.ParseCIDR(clusterCIDR)
	if err != nil {
		return nil, fmt.Errorf("cluster CIDR %q: %w", clusterCIDR, err)
	}
	ones, bits := base.Mask.Size()
	switch {
	case maskSize <= ones:
		return nil, fmt.Errorf("node mask /%d must be longer than the cluster CIDR's /%d", maskSize, ones)
	case maskSize > bits-2:
		return nil, fmt.Errorf("node mask /%d leaves no room for a gateway and a pod: at most /%d", maskSize, bits-2)
	case maskSize-ones > maxSubnetBits:
		return nil, fmt.Errorf("node mask /%d splits the cluster CIDR's /%d into more than 2^%d subnets: at most /%d", maskSize, ones, maxSubnetBits, ones+maxSubnetBits)
	}
	return base, nil
}

// newAllocator splits cidr into subnets of maskSize bits, none of them overlapping serviceCIDR ("" for
// none).
func newAllocator(cidr string, maskSize int, serviceCIDR string) (*allocator, error) {
	base, err := parseCIDRs(cidr, maskSize)
	if err != nil {
		return nil, fmt.Errorf("nodeipam: %w", err)
	}
	svc, err := parseServiceCIDR(base, serviceCIDR)
	if err != nil {
		return nil, fmt.Errorf("nodeipam: %w", err)
	}
	ones, _ := base.Mask.Size()
	a := &allocator{base: base, maskSize: maskSize, count: 1 << (maskSize - ones), used: map[int]string{}, byNode: map[string][]int{},
		label: base.String()}
	cidrMax.WithLabelValues(a.label).Set(float64(a.count))
	if svc != nil {
		a.service = svc.String()
		a.occupy(serviceRange, a.service) // nothing when they do not overlap
	}
	return a, nil
}

// holder names who holds a subnet, for a message.
func (a *allocator) holder(owner string) string {
	if owner == serviceRange {
		return "the Service IP range " + a.service
	}
	return "node " + owner + "'s pod CIDR"
}

func (a *allocator) subnet(i int) string {
	_, bits := a.base.Mask.Size()
	n := new(big.Int).SetBytes(a.base.IP)
	n.Add(n, new(big.Int).Lsh(big.NewInt(int64(i)), uint(bits-a.maskSize)))
	b := n.Bytes()
	ip := make(net.IP, len(a.base.IP))
	copy(ip[len(ip)-len(b):], b)
	return (&net.IPNet{IP: ip, Mask: net.CIDRMask(a.maskSize, bits)}).String()
}

// span returns the subnets a CIDR found on a node overlaps: the one it lies in when it is as long as
// ours or longer, each one inside it when it is shorter (a node set up under a shorter mask before the
// setting changed, or by hand), every one when it holds the whole cluster CIDR. ok is false when it
// does not overlap the cluster CIDR.
func (a *allocator) span(cidr string) (first, n int, ok bool) {
	_, c, err := net.ParseCIDR(cidr)
	if err != nil || len(c.IP) != len(a.base.IP) {
		return 0, 0, false
	}
	ones, bits := c.Mask.Size()
	baseOnes, _ := a.base.Mask.Size()
	if ones <= baseOnes {
		if !c.Contains(a.base.IP) {
			return 0, 0, false
		}
		return 0, a.count, true
	}
	if !a.base.Contains(c.IP) {
		return 0, 0, false
	}
	off := new(big.Int).Sub(new(big.Int).SetBytes(c.IP), new(big.Int).SetBytes(a.base.IP))
	first = int(off.Rsh(off, uint(bits-a.maskSize)).Int64())
	if ones >= a.maskSize {
		return first, 1, true
	}
	return first, 1 << (a.maskSize - ones), true
}

// occupy records an allocation found on a node, so no subnet it overlaps is handed out again. If
// another node, or the Service range, already holds one of them (and keeps it), it returns that
// holder; "" otherwise.
func (a *allocator) occupy(node, cidr string) (clash string) {
	first, n, ok := a.span(cidr)
	if !ok {
		return "" // outside our range: someone else manages it
	}
	for i := first; i < first+n; i++ {
		switch owner, taken := a.used[i]; {
		case !taken:
			a.take(i, node)
		case owner != node && clash == "":
			clash = owner
		}
	}
	return clash
}

// allocate returns node's subnet, picking a free one if it has none.
func (a *allocator) allocate(node string) (string, error) {
	if held := a.byNode[node]; len(held) > 0 {
		return a.subnet(held[0]), nil
	}
	for k := 0; k < a.count; k++ {
		i := (a.next + k) % a.count
		if _, taken := a.used[i]; !taken {
			a.take(i, node)
			a.next = (i + 1) % a.count
			cidrAllocationTries.WithLabelValues(a.label).Observe(float64(k))
			return a.subnet(i), nil
		}
	}
	return "", ErrExhausted
}

// settle makes node hold just the subnets its CIDRs overlap: one reserved for it that it did not get
// (its patch failed, and its CIDR was set by someone else meanwhile) is free again.
func (a *allocator) settle(node string, cidrs []string) {
	on := map[int]bool{}
	for _, cidr := range cidrs {
		if first, n, ok := a.span(cidr); ok {
			for i := first; i < first+n; i++ {
				on[i] = true
			}
		}
	}
	var kept []int
	for _, i := range a.byNode[node] {
		if on[i] {
			kept = append(kept, i)
		} else {
			a.free(i)
		}
	}
	if len(kept) == 0 {
		delete(a.byNode, node)
		return
	}
	a.byNode[node] = kept
}

// release frees node's subnet.
func (a *allocator) release(node string) {
	for _, i := range a.byNode[node] {
		a.free(i)
	}
	delete(a.byNode, node)
}

// take gives subnet i, free, to node, and counts it.
func (a *allocator) take(i int, node string) {
	a.used[i] = node
	a.byNode[node] = append(a.byNode[node], i)
	cidrAllocations.WithLabelValues(a.label).Inc()
	cidrUsage.WithLabelValues(a.label).Set(float64(len(a.used)) / float64(a.count))
}

// free frees subnet i, and counts it; the caller updates byNode.
func (a *allocator) free(i int) {
	if _, taken := a.used[i]; !taken {
		return
	}
	delete(a.used, i)
	cidrReleases.WithLabelValues(a.label).Inc()
	cidrUsage.WithLabelValues(a.label).Set(float64(len(a.used)) / float64(a.count))
}
