package e2e

import (
	"strings"
	"testing"
)

// A ReplicationController through the real kubectl, on hollow nodes: created, scaled with
// `kubectl scale rc` (its scale subresource), its pods Running, printed with kubectl's columns
// and listed by `get all`, and deleted with its pods (the garbage collector follows its pods'
// owner references).
func TestReplicationControllerWithKubectl(t *testing.T) {
	s := startServer(t)
	k := newKubectl(t, s, 33)
	startHollowNodes(t, s, "--count", "2", "--node-name", "hollow")
	eventually(t, k, []string{"hollow-0", "hollow-1"}, "get", "nodes")

	k.okIn(`apiVersion: v1
kind: ReplicationController
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: app, image: example.com/web:1}]
`, "apply", "-f", "-")
	contains(t, "scale", k.ok("scale", "rc", "web", "--replicas=3"), "replicationcontroller/web scaled")
	running := func() int { return countRunning(k, "web") }
	waitCount(t, "running pods", 3, running)
	out := eventually(t, k, []string{"web    3         3         3"}, "get", "rc", "web")
	contains(t, "columns", out, "NAME   DESIRED   CURRENT   READY   AGE")
	contains(t, "wide columns", k.ok("get", "rc", "-o", "wide"), "CONTAINERS   IMAGES", "app          example.com/web:1   app=web")
	contains(t, "get all", k.ok("get", "all"), "replicationcontroller/web")

	k.ok("delete", "rc", "web")
	waitCount(t, "pods after deleting the rc", 0, func() int { return podCount(k, "web") })
}

// countRunning counts the Running pods of app=name.
func countRunning(k *kubectl, name string) int {
	out, err := k.run("", "get", "pods", "-l", "app="+name, "--field-selector", "status.phase=Running", "-o", "name")
	if err != nil {
		return -1
	}
	return len(strings.Fields(out))
}
