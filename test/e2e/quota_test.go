package e2e

import (
	"testing"
)

const quotaWorkload = `apiVersion: v1
kind: ResourceQuota
metadata: {name: compute, namespace: default}
spec:
  hard: {pods: "10", requests.cpu: "2", limits.memory: 1Gi, count/deployments.apps: "3"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: example.com/web:1
        resources: {requests: {cpu: 250m}, limits: {memory: 128Mi}}
`

// ResourceQuota status follows what the namespace uses, as kubectl shows it.
func TestResourceQuotaStatus(t *testing.T) {
	s := startServer(t)
	k := newKubectl(t, s, 33)
	startHollowNodes(t, s, "--count", "1", "--node-name", "hollow")
	eventually(t, k, []string{"hollow"}, "get", "nodes")

	k.okIn(quotaWorkload, "apply", "-f", "-")
	k.ok("rollout", "status", "deploy/web", "--timeout=90s")
	eventually(t, k, []string{"2 500m 256Mi 1"}, "get", "quota", "compute", "-o",
		`jsonpath={.status.used.pods} {.status.used.requests\.cpu} {.status.used.limits\.memory} {.status.used.count/deployments\.apps}`)
	k.ok("scale", "deploy/web", "--replicas=1")
	eventually(t, k, []string{"1 250m 128Mi"}, "get", "quota", "compute", "-o",
		`jsonpath={.status.used.pods} {.status.used.requests\.cpu} {.status.used.limits\.memory}`)
	contains(t, "describe quota", k.ok("describe", "quota", "compute"), "requests.cpu", "250m", "2")
}
