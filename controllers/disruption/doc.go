// Package disruption keeps PodDisruptionBudget status: how many selected pods are healthy
// (currentHealthy), how many must stay healthy (desiredHealthy, from minAvailable or maxUnavailable;
// percentages and maxUnavailable are taken of the replica count of the pods' controllers), and how
// many may be disrupted now (disruptionsAllowed), which the API server's eviction subresource spends.
//
// Evictions the API server granted are listed in status.disruptedPods; such a pod no longer counts
// as healthy until it is gone, or for two minutes if its deletion never shows up.
package disruption
