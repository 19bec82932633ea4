package e2e

import (
	"strings"
	"testing"
)

const guardedWeb = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: web, image: example.com/web:1}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: web}}
`

// kubectl drain respects a PodDisruptionBudget: while the budget allows no
// disruption the drain keeps being refused (429) and gives up at its
// timeout; once the budget allows one, the drain evicts the pods and the
// Deployment brings them back on the other node.
func TestDrainRespectsDisruptionBudget(t *testing.T) {
	s := startServer(t)
	k := newKubectl(t, s, 33)
	startHollowNodes(t, s, "--count", "2", "--node-name", "hollow")
	eventually(t, k, []string{"hollow-0", "hollow-1"}, "get", "nodes")

	k.okIn(guardedWeb, "apply", "-f", "-")
	k.ok("rollout", "status", "deploy/web", "--timeout=90s")
	eventually(t, k, []string{"2 2 0"}, "get", "pdb", "web", "-o", "jsonpath={.status.currentHealthy} {.status.desiredHealthy} {.status.disruptionsAllowed}")
	node := strings.Fields(k.ok("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].spec.nodeName}"))[0]

	out := k.fails("", "drain", node, "--ignore-daemonsets", "--timeout=12s")
	contains(t, "refused drain", out, "Cannot evict pod as it would violate the pod's disruption budget")
	if n := strings.Count(k.ok("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].metadata.name}"), "web-"); n != 2 {
		t.Fatalf("pods lost while the budget allowed no disruption: %d", n)
	}

	k.ok("patch", "pdb", "web", "--type=merge", "-p", `{"spec":{"minAvailable":1}}`)
	eventually(t, k, []string{"1"}, "get", "pdb", "web", "-o", "jsonpath={.status.disruptionsAllowed}")
	k.ok("drain", node, "--ignore-daemonsets", "--timeout=90s")
	k.ok("rollout", "status", "deploy/web", "--timeout=90s")
	if nodes := k.ok("get", "pods", "-l", "app=web", "--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].spec.nodeName}"); strings.Contains(nodes, node) {
		t.Fatalf("pods still on the drained node %s: %s", node, nodes)
	}
}
