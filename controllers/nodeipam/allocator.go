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
}

// maxSubnetBits bounds the subnets of a cluster CIDR at 2^20: each is a map entry while in use.
const maxSubnetBits = 20

// CheckCIDRs refuses a cluster CIDR and node mask size the controller cannot split: the mask must be
// longer than the cluster CIDR's, leave a node room for its pods' gateway and at least one pod (the
// node agent's bridge takes the first address), and give at most 2^20 subnets.
func CheckCIDRs(clusterCIDR string, maskSize int) error {
	_, err := parseCIDRs(clusterCIDR, maskSize)
	return err
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

func newAllocator(cidr string, maskSize int) (*allocator, error) {
	base, err := parseCIDRs(cidr, maskSize)
	if err != nil {
		return nil, fmt.Errorf("nodeipam: %w", err)
	}
	ones, _ := base.Mask.Size()
	return &allocator{base: base, maskSize: maskSize, count: 1 << (maskSize - ones), used: map[int]string{}, byNode: map[string][]int{}}, nil
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

// occupy records an allocation found on a node, so no subnet it overlaps is handed out again. It
// reports false if another node already holds one of them (which that node keeps).
func (a *allocator) occupy(node, cidr string) bool {
	first, n, ok := a.span(cidr)
	if !ok {
		return true // outside our range: someone else manages it
	}
	free := true
	for i := first; i < first+n; i++ {
		switch owner, taken := a.used[i]; {
		case !taken:
			a.used[i] = node
			a.byNode[node] = append(a.byNode[node], i)
		case owner != node:
			free = false
		}
	}
	return free
}

// allocate returns node's subnet, picking a free one if it has none.
func (a *allocator) allocate(node string) (string, error) {
	if held := a.byNode[node]; len(held) > 0 {
		return a.subnet(held[0]), nil
	}
	for k := 0; k < a.count; k++ {
		i := (a.next + k) % a.count
		if _, taken := a.used[i]; !taken {
			a.used[i] = node
			a.byNode[node] = []int{i}
			a.next = (i + 1) % a.count
			return a.subnet(i), nil
		}
	}
	return "", ErrExhausted
}

// release frees node's subnet.
func (a *allocator) release(node string) {
	for _, i := range a.byNode[node] {
		delete(a.used, i)
	}
	delete(a.byNode, node)
}
