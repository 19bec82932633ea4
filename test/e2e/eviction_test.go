package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffkube/skiff/kubelet/nodetest"
	"github.com/skiffkube/skiff/kubelet/testimage"
)

// privateContainerd runs a containerd of the test's own (its own socket,
// root and state) until the test ends, so that the node agent's start-up
// clean-up of orphaned pods sees only this test's containers, never those
// of another node on the machine. It returns the socket.
func privateContainerd(t *testing.T) string {
	t.Helper()
	nodetest.RequireRoot(t)
	bin, err := exec.LookPath("containerd")
	if err != nil {
		needOrSkip(t, "needs the containerd binary: %v", err)
	}
	// Short paths: a unix socket path is limited to 108 bytes.
	dir, err := os.MkdirTemp("", "ctd-")
	if err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "c.sock")
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = %q
[ttrpc]
  address = %q
[debug]
  address = ""
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), socket, socket+".ttrpc")
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	log := &lockedWriter{w: &strings.Builder{}}
	cmd := exec.Command(bin, "--config", filepath.Join(dir, "config.toml"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	// Registered first, so it runs last: after the server and its pods.
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("containerd log:\n%s", log.String())
		}
		_ = os.RemoveAll(dir)
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(socket); err == nil {
			return socket
		}
		select {
		case <-exited:
			t.Fatalf("containerd exited:\n%s", log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("containerd socket %s not there after 20s:\n%s", socket, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// memTotal is this machine's MemTotal in bytes.
func memTotal(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb int64
			if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), &kb); err == nil {
				return kb * 1024
			}
		}
	}
	t.Fatal("no MemTotal in /proc/meminfo")
	return 0
}

// Node-pressure eviction on real containerd: with the default thresholds
// the node reports no memory pressure; restarted with a memory threshold
// above what the machine has (its measured memory.available is genuinely
// below it) the node reports MemoryPressure, the node lifecycle controller
// taints it memory-pressure:NoSchedule, the agent evicts the BestEffort pod
// running there (Failed, Evicted, a Warning Event), refuses a BestEffort
// pod bound to it by hand, and the ReplicaSet's replacement is kept off the
// node by the taint.
func TestMemoryPressureEvictsBestEffortPod(t *testing.T) {
	// Its own containerd and pod addresses: other nodes may run on this
	// machine (the agent's start-up clean-up would take their pods for
	// orphans, and the same pod CIDR would give out their addresses).
	isolated := []string{"--containerd-socket", privateContainerd(t), "--cluster-cidr", "10.201.0.0/16"}
	// The node's gateway address stays on the shared bridge; it is this test's alone.
	t.Cleanup(func() { _ = exec.Command("ip", "addr", "del", "10.201.0.1/24", "dev", "skiff0").Run() })
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "agent", "images"), 0o755); err != nil {
		t.Fatal(err)
	}
	testimage.Build(t, filepath.Join(dir, "agent", "images"))
	s, k := startNodeServerIn(t, dir, freePort(t), isolated...)
	cond := func(typ string) string {
		return fmt.Sprintf(`jsonpath={.status.conditions[?(@.type=="%s")].status} {.status.conditions[?(@.type=="%s")].reason}`, typ, typ)
	}
	for typ, want := range map[string]string{
		"MemoryPressure": "False KubeletHasSufficientMemory",
		"DiskPressure":   "False KubeletHasNoDiskPressure",
		"PIDPressure":    "False KubeletHasSufficientPID",
	} {
		if got := k.ok("get", "node", nodeName, "-o", cond(typ)); got != want {
			t.Errorf("%s with the default thresholds: %q, want %q", typ, got, want)
		}
	}
	k.okIn(`apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: hog
spec:
  replicas: 1
  selector:
    matchLabels: {app: hog}
  template:
    metadata:
      labels: {app: hog}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: app
        image: `+testimage.Ref+`
        args: ["serve", ":8080"]
`, "apply", "-f", "-")
	pod := waitFor(t, k, 90*time.Second, "the BestEffort pod running", func(out string) bool { return strings.HasSuffix(out, " Running BestEffort") },
		"get", "pods", "-l", "app=hog", "-o", "jsonpath={.items[0].metadata.name} {.items[0].status.phase} {.items[0].status.qosClass}")
	pod = strings.Fields(pod)[0]
	if taints := k.ok("get", "node", nodeName, "-o", "jsonpath={.spec.taints[*].key}"); strings.Contains(taints, "memory-pressure") {
		t.Fatalf("memory-pressure taint without pressure: %s", taints)
	}

	threshold := memTotal(t) + 1<<30
	port := nodeAPIPort(t, k)
	s.stop()
	s, k = startNodeServerIn(t, s.dataDir, port, append(isolated, "--eviction-hard", fmt.Sprintf("memory.available<%d", threshold),
		"--eviction-pressure-transition-period", "30s")...)
	waitFor(t, k, 60*time.Second, "MemoryPressure=True", func(out string) bool { return out == "True KubeletHasInsufficientMemory" },
		"get", "node", nodeName, "-o", cond("MemoryPressure"))
	if msg := k.ok("get", "node", nodeName, "-o", `jsonpath={.status.conditions[?(@.type=="MemoryPressure")].message}`); msg != "kubelet has insufficient memory available" {
		t.Errorf("MemoryPressure message %q", msg)
	}
	waitFor(t, k, 30*time.Second, "the memory-pressure NoSchedule taint", func(out string) bool {
		return strings.Contains(out, "node.kubernetes.io/memory-pressure:NoSchedule")
	}, "get", "node", nodeName, "-o", `jsonpath={range .spec.taints[*]}{.key}:{.effect} {end}`)

	status := waitFor(t, k, 60*time.Second, "the pod evicted", func(out string) bool { return strings.HasPrefix(out, "Failed Evicted ") },
		"get", "pod", pod, "-o", "jsonpath={.status.phase} {.status.reason} {.status.message}")
	wantMsg := fmt.Sprintf("The node was low on resource: memory. Threshold quantity: %d, available: ", threshold)
	if !strings.Contains(status, wantMsg) || !strings.Contains(status, "Container app was using ") {
		t.Errorf("eviction status %q, want the message to start %q and name the container", status, wantMsg)
	}
	if st := k.ok("get", "pod", pod, "-o", "jsonpath={.status.containerStatuses[0].state.terminated.exitCode}"); st != "137" {
		t.Errorf("container of the evicted pod: exit code %q, want 137", st)
	}
	waitFor(t, k, 30*time.Second, "the Evicted and NodeHasInsufficientMemory Events", func(out string) bool {
		return strings.Contains(out, "Warning Evicted Pod "+pod+"\n") && strings.Contains(out, "Normal NodeHasInsufficientMemory Node "+nodeName+"\n")
	}, "get", "events", "-A", "-o", `jsonpath={range .items[*]}{.type} {.reason} {.involvedObject.kind} {.involvedObject.name}{"\n"}{end}`)

	// A BestEffort pod bound to the node by hand (past the scheduler and
	// its taint check) is refused by the agent's admission.
	k.okIn(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: bound
spec:
  nodeName: %s
  containers:
  - name: app
    image: %s
    args: ["serve", ":8080"]
`, nodeName, testimage.Ref), "apply", "-f", "-")
	waitFor(t, k, 30*time.Second, "the hand-bound BestEffort pod refused", func(out string) bool {
		return out == "Failed Evicted Pod was rejected: The node had condition: [MemoryPressure]."
	}, "get", "pod", "bound", "-o", "jsonpath={.status.phase} {.status.reason} {.status.message}")

	// The ReplicaSet replaces the failed pod; the taint keeps the new one off.
	repl := waitFor(t, k, 60*time.Second, "a replacement held back by the taint", func(out string) bool {
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) >= 3 && f[0] != pod && f[1] == "Pending" && strings.Contains(line, "memory-pressure") {
				return true
			}
		}
		return false
	}, "get", "pods", "-l", "app=hog", "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.status.conditions[?(@.type=="PodScheduled")].message}{"\n"}{end}`)
	t.Logf("pods after the eviction:\n%s", repl)
}
