package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// startHollowNodes runs `skiff agent --runtime fake` against s until the test
// ends.
func startHollowNodes(t testing.TB, s *server, args ...string) *exec.Cmd {
	t.Helper()
	var log bytes.Buffer
	cmd := exec.Command(skiffBin, append([]string{"agent", "--runtime", "fake", "--kubeconfig", s.kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("skiff agent log:\n%s", log.String())
		}
	})
	return cmd
}

// eventually retries a kubectl command until its output contains every want.
func eventually(t *testing.T, k *kubectl, wants []string, args ...string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := k.run("", args...)
		ok := err == nil
		for _, w := range wants {
			ok = ok && strings.Contains(out, w)
		}
		if ok {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl %s never showed %q; last output:\n%s", strings.Join(args, " "), wants, out)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Hollow nodes register, heartbeat, run a pod bound to them and let it go
// when it is deleted — through the real API server and kubectl.
func TestHollowNodesRunPods(t *testing.T) {
	s := startServer(t)
	k := newKubectl(t, s, 33)
	startHollowNodes(t, s, "--count", "3", "--node-name", "hollow", "--node-label", "tier=test", "--capacity", "cpu=8,memory=16Gi,pods=50")

	out := eventually(t, k, []string{"hollow-0", "hollow-1", "hollow-2"}, "get", "nodes", "-l", "tier=test")
	if strings.Count(out, " Ready ") != 3 {
		t.Fatalf("want 3 Ready nodes:\n%s", out)
	}
	eventually(t, k, []string{"hollow-0", "hollow-2"}, "get", "leases", "-n", "kube-node-lease")
	contains(t, "node capacity", k.ok("get", "node", "hollow-1", "-o", "jsonpath={.status.capacity.cpu} {.status.allocatable.pods} {.status.nodeInfo.containerRuntimeVersion}"), "8 50 fake://")

	// The node IPAM controller (in the server) gives hollow-1 a pod CIDR.
	cidr := eventually(t, k, []string{"10.42."}, "get", "node", "hollow-1", "-o", "jsonpath={.spec.podCIDR}")
	prefix := cidr[:strings.LastIndex(cidr, ".")+1] // "10.42.N."
	k.okIn(`apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  nodeName: hollow-1
  terminationGracePeriodSeconds: 5
  containers: [{name: app, image: example.com/web:1}]
`, "apply", "-f", "-")
	out = eventually(t, k, []string{"Running", prefix}, "get", "pod", "web", "-o", "wide")
	contains(t, "pod", out, "1/1", "hollow-1")
	k.ok("delete", "pod", "web", "--wait", "--timeout=60s")
	if out, _ := k.run("", "get", "pod", "web"); !strings.Contains(out, "NotFound") {
		t.Fatalf("pod still there after delete --wait:\n%s", out)
	}
}
