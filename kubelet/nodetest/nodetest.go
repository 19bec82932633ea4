// Package nodetest holds what the node-agent integration tests share: the
// checks that skip a test with a stated reason where the machine lacks root
// or containerd, and fail it instead under CI=true, where .ci/run provides
// both and a skip would hide a regression.
package nodetest

import (
	"context"
	"net"
	"os"
	"testing"
	"time"
)

// DefaultContainerdSocket is where containerd listens unless configured otherwise.
const DefaultContainerdSocket = "/run/containerd/containerd.sock"

// InCI reports whether the tests run under CI=true.
func InCI() bool { return os.Getenv("CI") == "true" }

// skipOrFail skips the test, or fails it when nothing may skip in CI.
func skipOrFail(t testing.TB, reason string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s (CI=true: run hack/install-node-deps.sh as root)", reason)
	}
	t.Skip(reason)
}

// RequireRoot skips (or fails under CI) unless the test runs as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "needs root: creates network namespaces, links and containers")
	}
}

// RequireContainerd skips (or fails under CI) unless the test runs as root
// and containerd answers on its socket (SKIFF_CONTAINERD_SOCKET, else the
// default). It returns the socket path.
func RequireContainerd(t testing.TB) string {
	t.Helper()
	RequireRoot(t)
	socket := os.Getenv("SKIFF_CONTAINERD_SOCKET")
	if socket == "" {
		socket = DefaultContainerdSocket
	}
	if _, err := os.Stat(socket); err != nil {
		skipOrFail(t, "needs containerd: socket "+socket+" not found (start it with hack/install-node-deps.sh)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		skipOrFail(t, "needs containerd: socket "+socket+" does not answer: "+err.Error())
	}
	conn.Close()
	return socket
}
