// Package endpointslice publishes, for every Service with a selector, EndpointSlices listing the
// addresses of the pods it selects, so that the service proxy and DNS know where to send traffic.
//
// Each endpoint carries the conditions Kubernetes defines: ready (pod Ready and not terminating, or the
// Service publishes not-ready addresses), serving (pod Ready, even while terminating) and terminating
// (pod being deleted). An endpoint names its pod's node and, from the node's
// topology.kubernetes.io/zone label, its zone. As in Kubernetes, a pod whose Node does not exist is
// left out (listed without a zone if the Service publishes not-ready addresses) and the Service is
// synced again with backoff (a FailedToUpdateEndpointSlices event); node changes queue only the
// Services whose Topology Aware Routing hints they overload (below), so a zone relabelled otherwise
// reaches the slices with the Service's next sync. Service target ports
// are resolved per pod, so a named targetPort can map to different numbers on different pods; endpoints
// that resolve to different port lists go to different slices, and each slice holds at most
// MaxEndpointsPerSlice endpoints. A failed slice write (create, update or delete) is, as in Kubernetes,
// a FailedToUpdateEndpointSlices warning on the Service, and the Service is synced again with backoff.
//
// As Kubernetes' reconciler, a sync moves as few endpoints as it can: an endpoint (known by its
// addresses, hostname and pod) stays in the slice that holds it and is updated there; a slice left
// without endpoints is deleted; new endpoints go first into the slices written anyway (the fullest
// first), then into the unchanged slice they fill closest to the limit, then into new slices; a slice
// to create and one to delete become one update. So a change to one pod writes only its slice. A
// Service without endpoints keeps one empty placeholder slice (no ports) per address family.
//
// As in Kubernetes, a Service gets slices of each address family in its spec.ipFamilies (addressType
// IPv4 or IPv6, each endpoint holding its pod's IP of that family from status.podIPs); one without
// ipFamilies gets its cluster IP's family, or both if headless. Slices of a family the Service does
// not have, or owned by an earlier Service of the same name, are deleted; slices already being deleted
// are left alone and their endpoints placed anew. Slices are labelled
// kubernetes.io/service-name and endpointslice.kubernetes.io/managed-by and owned by the Service. A
// Service being deleted gets no new slices (its existing ones are still updated and deleted), so the
// garbage collector's foreground deletion of them is not raced.
//
// Endpoint hints (endpoints[].hints.forZones) are set per address family as Kubernetes v1.33 sets
// them, once a sync knows which slices it writes. The service.kubernetes.io/topology-mode annotation
// (or the deprecated topology-aware-hints, which wins when both are set) "Auto" turns on Topology
// Aware Routing, as Kubernetes' topologycache: each zone is owed a share of the ready endpoints in
// proportion to the allocatable CPU of its Ready nodes (control-plane nodes left out); endpoints are
// hinted for their own zone, then moved from zones over their share to zones under it, each zone
// keeping at least its share less the 20% overload threshold. Hints are not given, with a
// TopologyAwareHintsDisabled warning naming upstream's reason, when a node lacks a zone or CPU, nodes
// are ready in fewer than two zones, there are fewer endpoints than zones, the minimums do not fit,
// or a ready endpoint has no zone; TopologyAwareHintsEnabled says when they come on, and
// TopologyAwareHintsDisabled when the annotation goes. A node added, deleted, or changing readiness
// or zone recomputes the shares (one worker) and queues the Services left overloaded. Unlike
// Kubernetes, what is remembered of a deleted Service is dropped.
//
// Without the annotation, spec.trafficDistribution PreferClose hints each ready endpoint with a zone
// for its own zone (one without a zone gets none; one not ready is left as it is). PreferSameZone and
// PreferSameNode, alpha and off in v1.33, and any other value count as unset. Without either, hints
// are removed. Hints are compared apart from the rest of an endpoint, so a slice is rewritten for
// them only when they must change (for PreferClose, a ready endpoint's hint missing or wrong; for
// Topology Aware Routing, a ready endpoint unhinted or hinted beyond its zone's allocation).
//
// As Kubernetes' controller, it queues a Service only for changes that can alter its slices: a pod
// update when the pod's endpoint can change (deletion, readiness, IPs, finishing) or when its labels
// make Services start or stop selecting it; a slice event only when someone else wrote or deleted the
// slice (the generations of its own writes and its own deletions are remembered, as the
// EndpointSliceTracker does; unlike it, a deletion of a slice written before a restart counts too),
// when the slice moves to or from its management or to another Service. A sync against a cache
// that has not caught up with its own writes fails and is retried with backoff.
//
// Slices created or updated carry endpoints.kubernetes.io/last-change-trigger-time, computed as
// Kubernetes' TriggerTimeTracker does (package triggertime): the Service's creation on its first sync,
// then the earliest pod Ready transition (or Service creation) newer than the last sync saw; a write
// without one removes the annotation, slices not written keep theirs.
package endpointslice
