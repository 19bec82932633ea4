package network

import (
	"errors"
	"fmt"
	"net"
	"testing"
)

func mustCIDR(t *testing.T, s string) *net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAllocatorIssuesDistinctAddressesSkippingTheGateway(t *testing.T) {
	a, err := newAllocator(t.TempDir(), mustCIDR(t, "10.9.0.0/29"), net.ParseIP("10.9.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	// A /29 has hosts .1-.6; .1 is the gateway, so five pods fit.
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		ip, err := a.Allocate(id)
		if err != nil {
			t.Fatalf("allocate %s: %v", id, err)
		}
		if ip.Equal(net.ParseIP("10.9.0.1")) || ip.Equal(net.ParseIP("10.9.0.0")) || ip.Equal(net.ParseIP("10.9.0.7")) {
			t.Errorf("%s got reserved address %s", id, ip)
		}
		if seen[ip.String()] {
			t.Errorf("%s got %s twice", id, ip)
		}
		seen[ip.String()] = true
	}
	if _, err := a.Allocate("f"); !errors.Is(err, ErrPoolExhausted) {
		t.Errorf("sixth pod: err = %v, want ErrPoolExhausted", err)
	}
}

func TestAllocatorIsIdempotentPerOwner(t *testing.T) {
	a, err := newAllocator(t.TempDir(), mustCIDR(t, "10.9.0.0/24"), net.ParseIP("10.9.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := a.Allocate("pod-1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := a.Allocate("pod-1")
	if err != nil {
		t.Fatal(err)
	}
	if !first.Equal(again) {
		t.Errorf("second Allocate for the same pod gave %s, first gave %s", again, first)
	}
}

func TestAllocatorStateSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	subnet := mustCIDR(t, "10.9.0.0/24")
	a, err := newAllocator(dir, subnet, net.ParseIP("10.9.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	ip1, err := a.Allocate("pod-1")
	if err != nil {
		t.Fatal(err)
	}
	// A new allocator on the same directory is an agent restart.
	b, err := newAllocator(dir, subnet, net.ParseIP("10.9.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.Lookup("pod-1")
	if err != nil || !got.Equal(ip1) {
		t.Fatalf("after restart pod-1 holds %v (err %v), want %s", got, err, ip1)
	}
	ip2, err := b.Allocate("pod-2")
	if err != nil {
		t.Fatal(err)
	}
	if ip2.Equal(ip1) {
		t.Errorf("after restart pod-2 got pod-1's live address %s", ip1)
	}
}

func TestAllocatorDoesNotReissueAReleasedAddressAtOnce(t *testing.T) {
	a, err := newAllocator(t.TempDir(), mustCIDR(t, "10.9.0.0/24"), net.ParseIP("10.9.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	ip1, err := a.Allocate("pod-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release("pod-1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.Lookup("pod-1"); got != nil {
		t.Errorf("pod-1 still holds %s after release", got)
	}
	ip2, err := a.Allocate("pod-2")
	if err != nil {
		t.Fatal(err)
	}
	if ip2.Equal(ip1) {
		t.Errorf("released address %s reissued at once", ip1)
	}
	if err := a.Release("never-allocated"); err != nil {
		t.Errorf("releasing nothing: %v", err)
	}
}

func TestAllocatorRejectsBadInput(t *testing.T) {
	if _, err := newAllocator(t.TempDir(), mustCIDR(t, "fd00::/64"), net.ParseIP("fd00::1")); err == nil {
		t.Error("IPv6 CIDR accepted")
	}
	if _, err := newAllocator(t.TempDir(), mustCIDR(t, "10.9.0.0/31"), net.ParseIP("10.9.0.1")); err == nil {
		t.Error("/31 accepted")
	}
	a, err := newAllocator(t.TempDir(), mustCIDR(t, "10.9.0.0/24"), net.ParseIP("10.9.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", "a/b", "a\nb"} {
		if _, err := a.Allocate(id); err == nil {
			t.Errorf("Allocate(%q) succeeded", id)
		}
	}
}

func TestAllocatorReserve(t *testing.T) {
	a, err := newAllocator(t.TempDir(), mustCIDR(t, "10.9.0.0/24"), net.ParseIP("10.9.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Reserve("pod-1", net.ParseIP("10.9.0.50")); err != nil {
		t.Fatal(err)
	}
	if err := a.Reserve("pod-1", net.ParseIP("10.9.0.50")); err != nil {
		t.Errorf("reserving the same address again: %v", err)
	}
	if got, _ := a.Lookup("pod-1"); !got.Equal(net.ParseIP("10.9.0.50")) {
		t.Errorf("pod-1 holds %v", got)
	}
	cases := []struct {
		name string
		id   string
		ip   string
		want error
	}{
		{"held by another pod", "pod-2", "10.9.0.50", ErrAddressInUse},
		{"second address for one pod", "pod-1", "10.9.0.51", nil},
		{"gateway", "pod-3", "10.9.0.1", nil},
		{"network address", "pod-3", "10.9.0.0", nil},
		{"broadcast", "pod-3", "10.9.0.255", nil},
		{"outside the CIDR", "pod-3", "10.8.0.5", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := a.Reserve(tc.id, net.ParseIP(tc.ip))
			if err == nil {
				t.Fatal("accepted")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
	// Allocate never hands out a reserved address.
	for i := 0; i < 252; i++ {
		ip, err := a.Allocate(fmt.Sprintf("p%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if ip.Equal(net.ParseIP("10.9.0.50")) {
			t.Fatal("reserved address allocated again")
		}
	}
}
