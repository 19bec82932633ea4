package e2e

import (
	"strings"
	"testing"
)

const webStatefulSet = `apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  clusterIP: None
  selector: {app: web-sts}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, namespace: default}
spec:
  serviceName: web
  replicas: 3
  selector: {matchLabels: {app: web-sts}}
  template:
    metadata: {labels: {app: web-sts}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: web, image: example.com/web:1}]
`

// A StatefulSet on hollow nodes with the real kubectl: stable names, a
// rolling update that rollout status follows, a partitioned update that
// leaves the lower ordinals alone, and scale-down from the top.
func TestStatefulSetOnHollowNodes(t *testing.T) {
	s := startServer(t)
	k := newKubectl(t, s, 33)
	startHollowNodes(t, s, "--count", "2", "--node-name", "hollow")
	eventually(t, k, []string{"hollow-0", "hollow-1"}, "get", "nodes")

	k.okIn(webStatefulSet, "apply", "-f", "-")
	k.ok("rollout", "status", "sts/web", "--timeout=90s")
	out := k.ok("get", "pods", "-l", "app=web-sts", "-o", "jsonpath={range .items[*]}{.metadata.name}={.spec.hostname}.{.spec.subdomain} {end}")
	for _, want := range []string{"web-0=web-0.web", "web-1=web-1.web", "web-2=web-2.web"} {
		contains(t, "stable identities", out, want)
	}

	// A member's identity labels are the set's: removed, they come back.
	k.ok("label", "pod", "web-1", "statefulset.kubernetes.io/pod-name-", "apps.kubernetes.io/pod-index=9", "--overwrite")
	eventually(t, k, []string{"web-1 1"}, "get", "pod", "web-1", "-o",
		`jsonpath={.metadata.labels.statefulset\.kubernetes\.io/pod-name} {.metadata.labels.apps\.kubernetes\.io/pod-index}`)

	k.ok("set", "image", "sts/web", "web=example.com/web:2")
	k.ok("rollout", "status", "sts/web", "--timeout=90s")
	images := k.ok("get", "pods", "-l", "app=web-sts", "-o", "jsonpath={.items[*].spec.containers[0].image}")
	if strings.Count(images, "example.com/web:2") != 3 {
		t.Fatalf("after the rolling update: %q", images)
	}

	k.ok("patch", "sts/web", "-p", `{"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":2}}}}`)
	k.ok("set", "image", "sts/web", "web=example.com/web:3")
	contains(t, "partitioned rollout", k.ok("rollout", "status", "sts/web", "--timeout=90s"), "partitioned roll out complete")
	for pod, image := range map[string]string{"web-0": "web:2", "web-1": "web:2", "web-2": "web:3"} {
		contains(t, pod, k.ok("get", "pod", pod, "-o", "jsonpath={.spec.containers[0].image}"), image)
	}

	// History and undo go through the ControllerRevisions; lifting the partition rolls web-0..1 too.
	contains(t, "history", k.ok("rollout", "history", "sts/web"), "1 ", "2 ", "3 ")
	k.ok("patch", "sts/web", "-p", `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}`)
	k.ok("rollout", "undo", "sts/web")
	k.ok("rollout", "status", "sts/web", "--timeout=90s")
	images = k.ok("get", "pods", "-l", "app=web-sts", "-o", "jsonpath={.items[*].spec.containers[0].image}")
	if strings.Count(images, "example.com/web:2") != 3 {
		t.Fatalf("after undo: %q", images)
	}

	k.ok("scale", "sts/web", "--replicas=1")
	eventually(t, k, []string{"1/1"}, "get", "sts", "web")
	waitCount(t, "pods after scale-down", 1, func() int { return podCountSel(k, "app=web-sts") })
	contains(t, "remaining pod", k.ok("get", "pods", "-l", "app=web-sts", "-o", "name"), "pod/web-0")
	contains(t, "events", k.ok("describe", "sts", "web"), "create Pod web-2 in StatefulSet web successful", "delete Pod web-2 in StatefulSet web successful")
}

func podCountSel(k *kubectl, selector string) int {
	out, err := k.run("", "get", "pods", "-l", selector, "-o", "name")
	if err != nil {
		return -1
	}
	return len(strings.Fields(out))
}
