package e2e

import (
	"strings"
	"testing"
)

const edgeDaemonSet = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: edge-agent, namespace: default}
spec:
  selector: {matchLabels: {app: edge-agent}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1}}
  template:
    metadata: {labels: {app: edge-agent}}
    spec:
      nodeSelector: {role: edge}
      terminationGracePeriodSeconds: 1
      containers: [{name: agent, image: example.com/agent:1}]
`

// A DaemonSet on hollow nodes with the real kubectl: a pod on every node
// matching its nodeSelector and none elsewhere, a rolling image update that
// kubectl rollout status follows, history and undo, and a pod for a node
// that starts matching later.
func TestDaemonSetOnMatchingNodes(t *testing.T) {
	s := startServer(t)
	k := newKubectl(t, s, 33)
	startHollowNodes(t, s, "--count", "2", "--node-name", "edge", "--node-label", "role=edge")
	startHollowNodes(t, s, "--count", "1", "--node-name", "core") // one node: named "core", no suffix
	eventually(t, k, []string{"edge-0", "edge-1", "core"}, "get", "nodes")

	k.okIn(edgeDaemonSet, "apply", "-f", "-")
	k.ok("rollout", "status", "ds/edge-agent", "--timeout=90s")
	nodesOf := func() string {
		return k.ok("get", "pods", "-l", "app=edge-agent", "--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].spec.nodeName}")
	}
	if got := strings.Fields(nodesOf()); len(got) != 2 || strings.Contains(strings.Join(got, " "), "core") {
		t.Fatalf("daemon pods on %v, want one on each edge node", got)
	}
	contains(t, "ds status", k.ok("get", "ds", "edge-agent", "-o", "jsonpath={.status.desiredNumberScheduled} {.status.numberReady} {.status.updatedNumberScheduled}"), "2 2 2")

	k.ok("set", "image", "ds/edge-agent", "agent=example.com/agent:2")
	k.ok("rollout", "status", "ds/edge-agent", "--timeout=90s")
	images := k.ok("get", "pods", "-l", "app=edge-agent", "--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].spec.containers[0].image}")
	if strings.Count(images, "example.com/agent:2") != 2 || strings.Contains(images, "agent:1") {
		t.Fatalf("after the rolling update: %q", images)
	}
	contains(t, "history", k.ok("rollout", "history", "ds/edge-agent"), "1 ", "2 ")
	k.ok("rollout", "undo", "ds/edge-agent")
	k.ok("rollout", "status", "ds/edge-agent", "--timeout=90s")
	contains(t, "image after undo", k.ok("get", "ds", "edge-agent", "-o", "jsonpath={.spec.template.spec.containers[0].image}"), "example.com/agent:1")
	// Three templates so far (agent:1, agent:2, agent:1 again): the API
	// server counts them as Kubernetes' does and the pods carry the count.
	contains(t, "template generation", k.ok("get", "ds", "edge-agent", "-o", `jsonpath={.metadata.annotations.deprecated\.daemonset\.template\.generation}`), "3")
	if gens := k.ok("get", "pods", "-l", "app=edge-agent", "--field-selector=status.phase=Running", "-o", `jsonpath={.items[*].metadata.labels.pod-template-generation}`); gens != "3 3" {
		t.Errorf("pod-template-generation labels %q after the undo, want 3 on both pods", gens)
	}

	// A surge update: new pods start beside the old ones, which go once they are replaced.
	k.ok("patch", "ds/edge-agent", "--type=merge", "-p", `{"spec":{"updateStrategy":{"rollingUpdate":{"maxSurge":1,"maxUnavailable":0}}}}`)
	k.ok("set", "image", "ds/edge-agent", "agent=example.com/agent:3")
	k.ok("rollout", "status", "ds/edge-agent", "--timeout=90s")
	eventually(t, k, []string{"example.com/agent:3 example.com/agent:3"}, "get", "pods", "-l", "app=edge-agent", "-o", "jsonpath={.items[*].spec.containers[0].image}")

	// A node that starts matching gets a pod.
	k.ok("label", "node", "core", "role=edge")
	eventually(t, k, []string{" core "}, "get", "pods", "-l", "app=edge-agent", "-o", "wide")
	k.ok("rollout", "status", "ds/edge-agent", "--timeout=90s")
	contains(t, "events", k.ok("describe", "ds", "edge-agent"), "SuccessfulCreate", "SuccessfulDelete")
}
