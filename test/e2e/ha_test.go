package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffkube/skiff/apiserver/pki"
	"github.com/skiffkube/skiff/storage/storagetest"
)

// Two servers on one PostgreSQL database are one cluster (DESIGN's high
// availability): a write through either is seen through the other, the
// controllers and the scheduler run on one of them only, and when that one
// dies without a word (SIGKILL: its Leases are not released) the other
// takes both over once the Leases expire. Nothing acknowledged is lost and
// no running pod is touched: the hollow nodes, joined through the
// survivor, stay Ready, and their pods keep running as they were.
func TestServersSharingPostgresHandOver(t *testing.T) {
	endpoint := storagetest.PostgresEndpoint(t)
	a := startServer(t, "--datastore-endpoint", endpoint)
	// Let a lead both loops before b starts, so that b is the standby.
	waitForLog(t, "server a's controller manager to lead", a.log, "became leader")
	waitForLog(t, "server a's scheduler to lead", a.log, "acquired leader lease")

	// b shares a's secrets, as README's Storage section tells operators.
	bDir := t.TempDir()
	for _, f := range []string{
		filepath.Join("cred", "encryption.key"),
		filepath.Join("tls", pki.CACertFile), filepath.Join("tls", pki.CAKeyFile),
		filepath.Join("tls", pki.NodeCACertFile), filepath.Join("tls", pki.NodeCAKeyFile),
		filepath.Join("tls", pki.ServiceAccountKeyFile),
		"token", "agent-token",
	} {
		copyFile(t, filepath.Join(a.dataDir, f), filepath.Join(bDir, f))
	}
	b := startServerIn(t, bDir, "--disable-agent", "--datastore-endpoint", endpoint)
	ka, kb := newKubectl(t, a, 33), newKubectl(t, b, 27)

	startHollowNodes(t, b, "--count", "2", "--node-name", "ha")
	eventually(t, ka, []string{"ha-0", "ha-1"}, "get", "nodes")
	ka.ok("create", "deployment", "web", "--image=example.com/web:1", "--replicas=3")
	kb.ok("rollout", "status", "deploy/web", "--timeout=90s")
	running := strings.Fields(kb.ok("get", "pods", "-l", "app=web", "--field-selector=status.phase=Running", "-o", "name"))
	if len(running) != 3 {
		t.Fatalf("want 3 running pods, got %v", running)
	}
	if strings.Contains(b.log.String(), "became leader") || strings.Contains(b.log.String(), "acquired leader lease") {
		t.Fatalf("server b led while server a did; its log:\n%s", b.log.String())
	}

	// A write a acknowledged just before it died.
	ka.ok("create", "configmap", "last-words", "--from-literal=said=before")
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.exited

	contains(t, "the write a acknowledged", kb.ok("get", "configmap", "last-words", "-o", "jsonpath={.data.said}"), "before")
	kb.ok("scale", "deploy/web", "--replicas=5")
	kb.ok("rollout", "status", "deploy/web", "--timeout=90s")
	contains(t, "server b's log", b.log.String(), "became leader", "acquired leader lease")
	eventually(t, kb, []string{"5"}, "get", "deploy", "web", "-o", "jsonpath={.status.availableReplicas}")
	after := kb.ok("get", "pods", "-l", "app=web", "--field-selector=status.phase=Running", "-o", "name")
	for _, pod := range running {
		if !strings.Contains(after, pod) {
			t.Errorf("%s no longer runs after server a died; running now:\n%s", pod, after)
		}
	}
	if out := kb.ok("get", "nodes"); strings.Contains(out, "NotReady") || strings.Contains(out, "SchedulingDisabled") {
		t.Errorf("the nodes joined through b suffered from a's death:\n%s", out)
	}
}

// waitForLog waits for marker to appear in a process's log.
func waitForLog(t *testing.T, what string, log *lockedWriter, marker string) {
	t.Helper()
	waitCount(t, what, 1, func() int {
		if strings.Contains(log.String(), marker) {
			return 1
		}
		return 0
	})
}

// copyFile copies src to dst (creating dst's directory) with src's mode.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
}
