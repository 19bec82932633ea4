package allocator_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/skiffkube/skiff/apiserver/allocator"
	"github.com/skiffkube/skiff/storage"
	"github.com/skiffkube/skiff/storage/storagetest"
)

func TestThousandConcurrentServicesGetUniqueIPs(t *testing.T) {
	storagetest.Dialects(t, func(t *testing.T, endpoint func(testing.TB) string) {
		ep := endpoint(t)
		stores := []*storage.Store{storagetest.Open(t, ep)}
		if storage.IsPostgres(ep) {
			stores = append(stores, storagetest.Open(t, ep)) // two API servers on one database
		}
		var allocs []*allocator.IPs
		for _, s := range stores {
			a, err := allocator.NewIPs(s, allocator.DefaultServiceCIDR)
			if err != nil {
				t.Fatal(err)
			}
			allocs = append(allocs, a)
		}
		ctx := context.Background()
		const n = 1000
		ips := make([]netip.Addr, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ips[i], errs[i] = allocs[i%len(allocs)].Allocate(ctx)
			}()
		}
		wg.Wait()
		seen := map[netip.Addr]bool{}
		for i, ip := range ips {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if seen[ip] {
				t.Fatalf("%s allocated twice", ip)
			}
			if !allocs[0].CIDR().Contains(ip) || ip == allocs[0].CIDR().Addr() {
				t.Fatalf("%s is not a usable address of %s", ip, allocs[0].CIDR())
			}
			seen[ip] = true
		}
	})
}

func TestExhaustionSpecificAndRelease(t *testing.T) {
	s := storagetest.Open(t, storagetest.SQLiteEndpoint(t))
	ctx := context.Background()
	a, err := allocator.NewIPs(s, "10.99.0.0/29") // 8 addresses: 6 usable
	if err != nil {
		t.Fatal(err)
	}
	if a.First() != netip.MustParseAddr("10.99.0.1") {
		t.Fatalf("first = %s", a.First())
	}
	if err := a.AllocateSpecific(ctx, netip.MustParseAddr("10.99.0.1")); err != nil {
		t.Fatal(err)
	}
	if err := a.AllocateSpecific(ctx, netip.MustParseAddr("10.99.0.1")); !errors.Is(err, allocator.ErrAllocated) {
		t.Fatalf("double specific allocation: %v", err)
	}
	for _, bad := range []string{"10.99.0.0", "10.99.0.7", "10.98.0.1"} {
		if err := a.AllocateSpecific(ctx, netip.MustParseAddr(bad)); !errors.Is(err, allocator.ErrNotInRange) {
			t.Fatalf("%s: want ErrNotInRange, got %v", bad, err)
		}
	}
	var got []netip.Addr
	for i := 0; i < 5; i++ {
		ip, err := a.Allocate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ip)
	}
	_, err = a.Allocate(ctx)
	if !errors.Is(err, allocator.ErrFull) || !strings.Contains(err.Error(), "10.99.0.0/29") {
		t.Fatalf("exhausted range: %v", err)
	}
	if err := a.Release(ctx, got[2]); err != nil {
		t.Fatal(err)
	}
	if ip, err := a.Allocate(ctx); err != nil || ip != got[2] {
		t.Fatalf("after release got %s %v, want %s", ip, err, got[2])
	}
	// Another server configured with a different range is refused.
	b, _ := allocator.NewIPs(s, "10.100.0.0/24")
	if _, err := b.Allocate(ctx); err == nil || !strings.Contains(err.Error(), "same range") {
		t.Fatalf("mismatched range: %v", err)
	}
}

func TestNodePorts(t *testing.T) {
	s := storagetest.Open(t, storagetest.SQLiteEndpoint(t))
	ctx := context.Background()
	if _, err := allocator.NewPorts(s, "32000-31000"); err == nil {
		t.Fatal("inverted range accepted")
	}
	p, err := allocator.NewPorts(s, "30000-30002")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AllocateSpecific(ctx, 30001); err != nil {
		t.Fatal(err)
	}
	if err := p.AllocateSpecific(ctx, 30001); !errors.Is(err, allocator.ErrAllocated) {
		t.Fatalf("double: %v", err)
	}
	if err := p.AllocateSpecific(ctx, 29999); !errors.Is(err, allocator.ErrNotInRange) || !strings.Contains(err.Error(), "30000-30002") {
		t.Fatalf("out of range: %v", err)
	}
	a, _ := p.Allocate(ctx)
	b, _ := p.Allocate(ctx)
	if a == b || a == 30001 || b == 30001 {
		t.Fatalf("ports %d %d", a, b)
	}
	if _, err := p.Allocate(ctx); !errors.Is(err, allocator.ErrFull) {
		t.Fatalf("full: %v", err)
	}
	p.Release(ctx, a)
	if c, err := p.Allocate(ctx); err != nil || c != a {
		t.Fatalf("reuse after release: %d %v", c, err)
	}
}
