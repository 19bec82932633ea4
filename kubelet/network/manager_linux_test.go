//go:build linux

package network

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/skiffkube/skiff/kubelet/nodetest"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// inNetns runs fn on a thread switched into the namespace at path. Sockets
// made by fn stay in that namespace after the thread switches back.
func inNetns(t *testing.T, path string, fn func()) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	ns, err := netns.GetFromPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	if err := netns.Set(ns); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := netns.Set(orig); err != nil {
			panic("cannot return to the host namespace: " + err.Error())
		}
	}()
	fn()
}

// echoListener serves one line back to every connection.
func echoListener(t *testing.T, path string) net.Listener {
	t.Helper()
	var l net.Listener
	inNetns(t, path, func() {
		var err error
		l, err = net.Listen("tcp4", ":7777")
		if err != nil {
			t.Fatal(err)
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return l
}

func roundTrip(conn net.Conn) error {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write([]byte("ping\n")); err != nil {
		return err
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(conn, buf); err != nil {
		return err
	}
	if string(buf) != "ping\n" {
		return errors.New("echo mismatch: " + string(buf))
	}
	return nil
}

func newTestManager(t *testing.T, bridge, cidr string) *Manager {
	t.Helper()
	nodetest.RequireRoot(t)
	m, err := New(Config{PodCIDR: cidr, StateDir: t.TempDir(), Bridge: bridge, NetnsPrefix: "sknettest-"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := m.EnsureBridge(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.RemoveBridge(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return m
}

func TestPodsReachableFromHostAndEachOther(t *testing.T) {
	m := newTestManager(t, "sktnet0", "10.251.7.0/24")
	ctx := context.Background()
	a, err := m.SetUp(ctx, "pod-a")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.TearDown(context.Background(), "pod-a") })
	b, err := m.SetUp(ctx, "pod-b")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.TearDown(context.Background(), "pod-b") })
	if a.IP.Equal(b.IP) {
		t.Fatalf("both pods got %s", a.IP)
	}
	if !a.Gateway.Equal(net.ParseIP("10.251.7.1")) {
		t.Errorf("gateway = %s", a.Gateway)
	}

	// Set up again: same answer, nothing duplicated.
	again, err := m.SetUp(ctx, "pod-a")
	if err != nil {
		t.Fatalf("second SetUp: %v", err)
	}
	if !again.IP.Equal(a.IP) || again.NetnsPath != a.NetnsPath {
		t.Errorf("second SetUp gave %+v, first %+v", again, a)
	}

	echoListener(t, b.NetnsPath)
	target := net.JoinHostPort(b.IP.String(), "7777")

	hostConn, err := net.DialTimeout("tcp4", target, 30*time.Second)
	if err != nil {
		t.Fatalf("host → pod-b %s: %v", target, err)
	}
	if err := roundTrip(hostConn); err != nil {
		t.Errorf("host → pod-b: %v", err)
	}

	var podConn net.Conn
	inNetns(t, a.NetnsPath, func() {
		podConn, err = net.DialTimeout("tcp4", target, 30*time.Second)
	})
	if err != nil {
		t.Fatalf("pod-a → pod-b %s: %v", target, err)
	}
	if err := roundTrip(podConn); err != nil {
		t.Errorf("pod-a → pod-b: %v", err)
	}

	// pod-a's default route goes via the gateway.
	ns, err := netns.GetFromPath(a.NetnsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	routes, err := h.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	var hasDefault bool
	for _, r := range routes {
		if (r.Dst == nil || r.Dst.IP.IsUnspecified()) && r.Gw.Equal(a.Gateway) {
			hasDefault = true
		}
	}
	if !hasDefault {
		t.Errorf("pod-a has no default route via %s: %v", a.Gateway, routes)
	}
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward"); err != nil || string(b) != "1\n" {
		t.Errorf("ip_forward = %q (%v), want 1", b, err)
	}
}

func TestTearDownLeavesNothingBehind(t *testing.T) {
	m := newTestManager(t, "sktnet1", "10.251.8.0/24")
	ctx := context.Background()
	p, err := m.SetUp(ctx, "pod-gone")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.TearDown(ctx, "pod-gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.NetnsPath); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("namespace %s still exists (stat err %v)", p.NetnsPath, err)
	}
	if _, err := netlink.LinkByName(p.HostVeth); err == nil {
		t.Errorf("veth %s still exists", p.HostVeth)
	}
	if got, err := m.Get("pod-gone"); err != nil || got != nil {
		t.Errorf("address still held: %+v (err %v)", got, err)
	}
	ids, err := m.Pods()
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 0 {
		t.Errorf("Pods() after teardown = %v", ids)
	}
	// A second teardown finds nothing to do.
	if err := m.TearDown(ctx, "pod-gone"); err != nil {
		t.Errorf("second TearDown: %v", err)
	}
}

func TestSetUpRecoversFromALostNamespace(t *testing.T) {
	// A /26, as --node-cidr-mask-size 26 gives a node: nothing here is tied to /24.
	m := newTestManager(t, "sktnet2", "10.251.9.0/26")
	ctx := context.Background()
	p, err := m.SetUp(ctx, "pod-r")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.TearDown(context.Background(), "pod-r") })
	if p.PrefixLen != 26 || !p.IP.Equal(net.ParseIP("10.251.9.2")) {
		t.Errorf("pod address %s/%d, want 10.251.9.2/26", p.IP, p.PrefixLen)
	}
	// Simulate a crash that lost the namespace but kept the host veth
	// record and address: delete the namespace only.
	if err := netns.DeleteNamed("sknettest-pod-r"); err != nil {
		t.Fatal(err)
	}
	p2, err := m.SetUp(ctx, "pod-r")
	if err != nil {
		t.Fatalf("SetUp after losing the namespace: %v", err)
	}
	if !p2.IP.Equal(p.IP) {
		t.Errorf("address changed from %s to %s", p.IP, p2.IP)
	}
	echoListener(t, p2.NetnsPath)
	conn, err := net.DialTimeout("tcp4", net.JoinHostPort(p2.IP.String(), "7777"), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(conn); err != nil {
		t.Error(err)
	}
}

func TestConfigRejectsBadValues(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
	}{
		{"missing CIDR", Config{StateDir: "/tmp/x"}},
		{"IPv6 CIDR", Config{PodCIDR: "fd00::/64", StateDir: "/tmp/x"}},
		{"missing state dir", Config{PodCIDR: "10.1.0.0/24"}},
		{"long bridge name", Config{PodCIDR: "10.1.0.0/24", StateDir: "/tmp/x", Bridge: "a-very-long-bridge-name"}},
		{"tiny MTU", Config{PodCIDR: "10.1.0.0/24", StateDir: "/tmp/x", MTU: 100}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.cfg.validate(); err == nil {
				t.Error("accepted")
			}
		})
	}
	m, err := New(Config{PodCIDR: "10.1.0.0/24", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", "../etc", "a b"} {
		if _, err := m.SetUp(context.Background(), id); err == nil {
			t.Errorf("SetUp(%q) succeeded", id)
		}
	}
}

func TestSetUpWithIPUsesTheChosenAddress(t *testing.T) {
	m := newTestManager(t, "sktnet3", "10.251.10.0/24")
	ctx := context.Background()
	want := net.ParseIP("10.251.10.77")
	p, err := m.SetUpWithIP(ctx, "pod-ip", want)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.TearDown(context.Background(), "pod-ip") })
	if !p.IP.Equal(want) {
		t.Errorf("pod got %s, want %s", p.IP, want)
	}
	if _, err := m.SetUpWithIP(ctx, "pod-other", want); !errors.Is(err, ErrAddressInUse) {
		t.Errorf("second pod on the same address: %v, want ErrAddressInUse", err)
	}
	// The refused pod left nothing, and the first pod still answers.
	if _, err := os.Stat("/var/run/netns/sknettest-pod-other"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("refused pod has a namespace (stat err %v)", err)
	}
	echoListener(t, p.NetnsPath)
	conn, err := net.DialTimeout("tcp4", net.JoinHostPort(want.String(), "7777"), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(conn); err != nil {
		t.Error(err)
	}
}
