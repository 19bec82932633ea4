package e2e

import (
	"strings"
	"testing"
	"time"
)

const externalDB = `apiVersion: v1
kind: Service
metadata:
  name: db
spec:
  ports:
  - name: pg
    port: 5432
---
apiVersion: v1
kind: Endpoints
metadata:
  name: db
  labels:
    team: data
subsets:
- addresses:
  - ip: 192.0.2.10
  ports:
  - name: pg
    port: 5432
`

// A Service without a selector, with hand-written Endpoints (the usual way to
// name an outside database), gets a mirrored EndpointSlice from skiff server,
// as from kube-controller-manager, so clients that read slices (CoreDNS,
// kube-proxy) see the address; edits follow and the slice goes with the
// Endpoints. Driven with the real kubectl.
func TestSelectorlessServiceEndpointsAreMirrored(t *testing.T) {
	s := startServer(t)
	k := newKubectl(t, s, 33)
	k.okIn(externalDB, "apply", "-f", "-")

	slices := []string{"get", "endpointslices", "-l", "kubernetes.io/service-name=db",
		"-o", `jsonpath={range .items[*]}{.metadata.labels.endpointslice\.kubernetes\.io/managed-by} {.metadata.labels.team} {.endpoints[*].addresses[*]} {.ports[*].port}{"\n"}{end}`}
	eventually(t, k, []string{"endpointslicemirroring-controller.k8s.io data 192.0.2.10 5432"}, slices...)

	k.okIn(strings.Replace(externalDB, "192.0.2.10", "192.0.2.11", 1), "apply", "-f", "-")
	eventually(t, k, []string{"endpointslicemirroring-controller.k8s.io data 192.0.2.11 5432"}, slices...)

	k.ok("delete", "endpoints", "db")
	deadline := time.Now().Add(60 * time.Second)
	for {
		out := k.ok(slices...)
		if strings.TrimSpace(out) == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mirrored slice outlived its Endpoints:\n%s", out)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
