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
	used     map[int]string // subnet index → node
	byNode   map[string]int
	next     int // where the search starts, so released subnets are not reused at once
}

func newAllocator(cidr string, maskSize int) (*allocator, error) {
	_, base, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, fmt.Errorf("nodeipam: cluster CIDR %q: %w", cidr, err)
	}
	ones, bits := base.Mask.Size()
	if maskSize <= ones || maskSize > bits || maskSize-ones > 20 {
		return nil, fmt.Errorf("nodeipam: node mask /%d must be longer than the cluster CIDR's /%d, at most /%d, and give at most 2^20 subnets", maskSize, ones, bits)
	}
	return &allocator{base: base, maskSize: maskSize, count: 1 << (maskSize - ones), used: map[int]string{}, byNode: map[string]int{}}, nil
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

// index returns the subnet index of cidr, or false if it is not one of ours.
func (a *allocator) index(cidr string) (int, bool) {
	ip, n, err := net.ParseCIDR(cidr)
	if err != nil || !a.base.Contains(ip) {
		return 0, false
	}
	if ones, _ := n.Mask.Size(); ones != a.maskSize {
		return 0, false
	}
	_, bits := a.base.Mask.Size()
	off := new(big.Int).Sub(new(big.Int).SetBytes(n.IP.To16()[16-len(a.base.IP):]), new(big.Int).SetBytes(a.base.IP))
	return int(off.Rsh(off, uint(bits-a.maskSize)).Int64()), true
}

// occupy records an allocation found on a node. It reports false if another node already holds it.
func (a *allocator) occupy(node, cidr string) bool {
	i, ok := a.index(cidr)
	if !ok {
		return true // outside our range: someone else manages it
	}
	if owner, taken := a.used[i]; taken && owner != node {
		return false
	}
	a.used[i] = node
	a.byNode[node] = i
	return true
}

// allocate returns node's subnet, picking a free one if it has none.
func (a *allocator) allocate(node string) (string, error) {
	if i, ok := a.byNode[node]; ok {
		return a.subnet(i), nil
	}
	for k := 0; k < a.count; k++ {
		i := (a.next + k) % a.count
		if _, taken := a.used[i]; !taken {
			a.used[i] = node
			a.byNode[node] = i
			a.next = (i + 1) % a.count
			return a.subnet(i), nil
		}
	}
	return "", ErrExhausted
}

// release frees node's subnet.
func (a *allocator) release(node string) {
	if i, ok := a.byNode[node]; ok {
		delete(a.used, i)
		delete(a.byNode, node)
	}
}
