// Package defaulting fills in the fields Kubernetes fills in when an object is
// created or updated, so that skiff stores and returns the same objects a real
// API server would (kubectl diff/apply, controllers and the node agent all rely
// on these values being present).
//
// The values follow k8s.io/kubernetes pkg/apis/*/v1/defaults.go and the
// generated zz_generated.defaults.go for the kinds skiff serves. Defaulting is
// idempotent: running it twice changes nothing the second time.
//
// Two steps Kubernetes performs outside defaults.go happen here too, because
// skiff stores the v1 objects it receives: a Secret's write-only stringData is
// folded into data, and a Job gets the selector and pod labels Kubernetes'
// job strategy generates from its uid (so the uid must be assigned first).
package defaulting
