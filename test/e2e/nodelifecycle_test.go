package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestStoppedNodesPodsMove: a hollow node whose process dies (no graceful
// cordon, its Lease simply stops) is marked Ready=Unknown and tainted
// unreachable by the node lifecycle controller after the server's
// --node-monitor-grace-period (15 s here, not the default 50 s); its pods,
// which tolerate that taint for 5 s, are then evicted, and their
// Deployment's replacements run on the nodes that are left.
func TestStoppedNodesPodsMove(t *testing.T) {
	s := startServer(t, "--node-monitor-grace-period", "15s")
	k := newKubectl(t, s, 31)
	doomed := startHollowNodes(t, s, "--count", "1", "--node-name", "doomed")
	eventually(t, k, []string{"doomed"}, "get", "nodes")

	k.okIn(`apiVersion: apps/v1
kind: Deployment
metadata: {name: mover, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: mover}}
  template:
    metadata: {labels: {app: mover}}
    spec:
      terminationGracePeriodSeconds: 1
      tolerations:
      - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 5}
      - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 5}
      containers: [{name: app, image: example.com/web:1}]
`, "apply", "-f", "-")
	k.ok("rollout", "status", "deploy/mover", "--timeout=90s")
	contains(t, "pods on the only node", k.ok("get", "pods", "-l", "app=mover", "-o", "jsonpath={.items[*].spec.nodeName}"),
		"doomed doomed doomed")
	// A StatefulSet's pod cannot be replaced while its predecessor of the same
	// name is stuck terminating on a dead node: only the administrator's
	// out-of-service taint (non-graceful node shutdown) lets it go.
	k.okIn(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: keeper, namespace: default}
spec:
  replicas: 1
  serviceName: keeper
  selector: {matchLabels: {app: keeper}}
  template:
    metadata: {labels: {app: keeper}}
    spec:
      terminationGracePeriodSeconds: 1
      tolerations:
      - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 5}
      - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 5}
      containers: [{name: app, image: example.com/db:1}]
`, "apply", "-f", "-")
	k.ok("rollout", "status", "sts/keeper", "--timeout=90s")

	startHollowNodes(t, s, "--count", "2", "--node-name", "spare")
	eventually(t, k, []string{"spare-0", "spare-1"}, "get", "nodes")

	if err := doomed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	waitFor(t, k, 90*time.Second, "doomed Ready=Unknown and tainted unreachable", func(out string) bool {
		return out == "Unknown node.kubernetes.io/unreachable"
	}, "get", "node", "doomed", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.spec.taints[?(@.effect=="NoExecute")].key}`)
	// The last renewal was at most 10 s before the kill: with the default
	// 50 s grace the node could not be marked before 40 s had passed; with
	// 15 s it is by about 25 s at most (the renewal is seen at the next 5 s
	// monitor sweep, the grace runs from then, and a sweep notices its end).
	took := time.Since(killed)
	if took >= 30*time.Second {
		t.Errorf("the node was marked unreachable %s after it stopped: --node-monitor-grace-period 15s was not applied", took.Round(time.Second))
	}
	t.Logf("node marked unreachable %s after it stopped", took.Round(100*time.Millisecond))

	waitFor(t, k, 90*time.Second, "three Running replicas on the spare nodes", func(out string) bool {
		fields := strings.Fields(out)
		if len(fields) != 3 {
			return false
		}
		for _, f := range fields {
			if !strings.HasPrefix(f, "spare-") || !strings.HasSuffix(f, "/Running") {
				return false
			}
		}
		return true
	}, "get", "pods", "-l", "app=mover", "--field-selector", "status.phase=Running", "-o",
		`go-template={{range .items}}{{if not .metadata.deletionTimestamp}}{{.spec.nodeName}}/{{.status.phase}} {{end}}{{end}}`)
	contains(t, "eviction events", k.ok("get", "events", "--field-selector", "reason=TaintManagerEviction"), "Marking for deletion Pod default/mover-")

	waitFor(t, k, 60*time.Second, "keeper-0 evicted but stuck terminating on doomed", func(out string) bool {
		return strings.HasPrefix(out, "doomed ") && out != "doomed "
	}, "get", "pod", "keeper-0", "-o", "jsonpath={.spec.nodeName} {.metadata.deletionTimestamp}")
	k.ok("taint", "node", "doomed", "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute")
	waitFor(t, k, 90*time.Second, "keeper-0 running again on a spare node", func(out string) bool {
		return strings.HasPrefix(out, "spare-") && strings.HasSuffix(out, " Running")
	}, "get", "pod", "keeper-0", "-o", "jsonpath={.spec.nodeName} {.status.phase}")
}

// A server down for longer than the grace period does not, once back, mark
// its nodes unreachable and their pods not ready: it judges heartbeats by
// when it sees them change, as kube-controller-manager does, so every node
// gets a full grace period from the controller's start to renew its Lease.
// (Judged by the Lease's renewal time, the node was unreachable at once.)
func TestServerRestartKeepsNodesReady(t *testing.T) {
	dir, port := t.TempDir(), freePort(t)
	flags := []string{"--disable-agent", "--node-monitor-grace-period", "15s"}
	s := startServerOn(t, dir, port, flags...)
	k := newKubectl(t, s, 33)
	startHollowNodes(t, s, "--node-name", "steady")
	ready := `jsonpath={.status.conditions[?(@.type=="Ready")].status}`
	waitFor(t, k, 60*time.Second, "steady Ready", func(out string) bool { return out == "True" }, "get", "node", "steady", "-o", ready)
	k.okIn(`apiVersion: v1
kind: Pod
metadata: {name: served, namespace: default}
spec:
  nodeName: steady
  terminationGracePeriodSeconds: 1
  containers: [{name: app, image: example.com/web:1}]
`, "apply", "-f", "-")
	waitFor(t, k, 60*time.Second, "the pod Ready", func(out string) bool { return out == "True" }, "get", "pod", "served", "-o", ready)

	s.stop()
	time.Sleep(20 * time.Second) // the last renewal is now older than the grace period
	s = startServerOn(t, dir, port, flags...)
	// Two grace periods: the agent reconnects and renews within its 10 s
	// interval, long before the first one ends.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out := k.ok("get", "node", "steady", "-o", ready) + " " + k.ok("get", "pod", "served", "-o", ready)
		if out != "True True" {
			t.Fatalf("after the restart the node and pod are Ready: %q, want True True; the server's log:\n%s", out, s.log.String())
		}
		time.Sleep(time.Second)
	}
	if ev := k.ok("get", "events", "--field-selector", "reason=NodeNotReady", "-o", "name"); ev != "" {
		t.Errorf("NodeNotReady events after the restart: %s", ev)
	}
}

// When every node stops heartbeating at once, the control plane is more
// likely cut off from them than they are all dead: the node is marked
// Unknown, but not tainted NoExecute, and its pods are not evicted (kube's
// master disruption mode), even those that tolerate the taint for a second.
func TestAllNodesDownEvictsNothing(t *testing.T) {
	s := startServer(t, "--node-monitor-grace-period", "15s")
	k := newKubectl(t, s, 33)
	agent := startHollowNodes(t, s, "--node-name", "alone")
	waitFor(t, k, 60*time.Second, "alone Ready", func(out string) bool { return out == "True" },
		"get", "node", "alone", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
	k.okIn(`apiVersion: v1
kind: Pod
metadata: {name: stays, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  tolerations:
  - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 1}
  containers: [{name: app, image: example.com/web:1}]
`, "apply", "-f", "-")
	waitFor(t, k, 60*time.Second, "the pod running", func(out string) bool { return out == "Running" }, "get", "pod", "stays", "-o", "jsonpath={.status.phase}")

	if err := agent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, k, 60*time.Second, "alone Ready=Unknown", func(out string) bool { return out == "Unknown" },
		"get", "node", "alone", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
	time.Sleep(10 * time.Second) // several monitor sweeps, ten times the pod's toleration
	if taints := k.ok("get", "node", "alone", "-o", `jsonpath={.spec.taints[*].key}:{.spec.taints[*].effect}`); taints != "node.kubernetes.io/unreachable:NoSchedule" {
		t.Errorf("taints of the only node, down: %q, want the unreachable NoSchedule taint alone", taints)
	}
	if out := k.ok("get", "pod", "stays", "-o", "jsonpath={.metadata.deletionTimestamp}|{.status.conditions[?(@.type==\"Ready\")].status}"); out != "|False" {
		t.Errorf("the pod: %q, want not deleted and not ready", out)
	}
	contains(t, "server log", s.log.String(), "master disruption mode")
}

// A Node that has never posted a status (created by hand here: no agent
// plays it) is marked Ready=Unknown --node-startup-grace-period (15 s here)
// after its registration: not at the default 60 s, nor at the monitor's 50 s.
func TestNodeStartupGracePeriod(t *testing.T) {
	s := startServer(t, "--node-startup-grace-period", "15s")
	k := newKubectl(t, s, 30)
	k.okIn("apiVersion: v1\nkind: Node\nmetadata: {name: silent}\n", "apply", "-f", "-")
	ready := `{.status.conditions[?(@.type=="Ready")]`
	out := waitFor(t, k, 35*time.Second, "the silent node marked Unknown", func(out string) bool { return strings.HasPrefix(out, "Unknown ") },
		"get", "node", "silent", "-o", "jsonpath="+ready+".status} "+ready+".reason} "+ready+".lastTransitionTime} {.metadata.creationTimestamp}")
	f := strings.Fields(out)
	if len(f) != 4 || f[1] != "NodeStatusNeverUpdated" {
		t.Fatalf("Ready condition and creation: %q, want Unknown NodeStatusNeverUpdated <marked> <created>", out)
	}
	marked, err1 := time.Parse(time.RFC3339, f[2])
	created, err2 := time.Parse(time.RFC3339, f[3])
	if err1 != nil || err2 != nil {
		t.Fatalf("times in %q: %v, %v", out, err1, err2)
	}
	if took := marked.Sub(created); took < 15*time.Second {
		t.Errorf("the node was marked Unknown %s after registering, within its 15 s startup grace period", took)
	}
}
