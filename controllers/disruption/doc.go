// Package disruption keeps PodDisruptionBudget status: how many selected pods are healthy
// (currentHealthy), how many must stay healthy (desiredHealthy, from minAvailable or maxUnavailable;
// percentages and maxUnavailable are taken of the replica count of the pods' controllers:
// Deployments, ReplicaSets, ReplicationControllers and StatefulSets from their caches, any other kind, such as a custom
// resource, from its scale subresource, found through discovery), and how
// many may be disrupted now (disruptionsAllowed), which the API server's eviction subresource spends.
//
// Evictions the API server granted are listed in status.disruptedPods; such a pod no longer counts
// as healthy until it is gone, or for two minutes if its deletion never shows up (then a NotDeleted
// warning is recorded on it). A pod that more than one budget selects, which the eviction API
// refuses to evict, gets a MultiplePodDisruptionBudgets warning; every such budget is counted.
//
// As in Kubernetes: pods without a controller are left out of a scale-based budget (with an
// UnmanagedPods warning); a ReplicaSet whose Deployment is gone counts its own replicas; a budget that expects no pods (one with only a selector) allows no
// disruption; a budget that cannot be computed allows none and keeps its observed generation. A
// pod's DisruptionTarget condition that stood two minutes without the pod being deleted (the
// eviction or preemption did not go through) is set back to False, so that a Job's
// podFailurePolicy does not take a later failure for a disruption.
package disruption
