// Package endpointslicemirroring is Kubernetes' EndpointSlice mirroring controller: for a Service
// without a selector, whose Endpoints a user or another program writes by hand (the usual way to
// give an outside database a name in the cluster), it publishes the same addresses as
// EndpointSlices, so that clients reading only slices (the service proxy, DNS) see them.
//
// An Endpoints object is mirrored while its Service exists without a selector, unless it is
// labelled endpointslice.kubernetes.io/skip-mirror=true (the API server's own kubernetes
// Endpoints are) or carries the leader-election annotation control-plane.alpha.kubernetes.io/leader.
// Its subsets are first repacked (addresses deduplicated, a not-ready listing winning over a ready
// one, grouped by the ports they share); each group of ports and address family becomes one slice
// of at most MaxEndpointsPerSubset endpoints (the rest is left out, with a TooManyAddressesToMirror
// event on the Endpoints; addresses that are not IPs give an InvalidIPAddress event). Ready
// addresses become endpoints with ready=true, not-ready ones ready=false.
//
// Slices are labelled kubernetes.io/service-name and endpointslice.kubernetes.io/managed-by=
// endpointslicemirroring-controller.k8s.io on top of the Endpoints' own labels, carry its
// annotations but endpoints.kubernetes.io/last-change-trigger-time and kubectl's
// last-applied-configuration, and are owned (controller reference) by the Endpoints. They are
// updated in place when the Endpoints change and deleted when the Endpoints go, stop being
// mirrored, or the Service goes or gains a selector. Slices managed by anyone else are never touched.
package endpointslicemirroring
