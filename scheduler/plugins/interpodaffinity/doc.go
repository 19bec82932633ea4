// Package interpodaffinity is the InterPodAffinity plugin. Filter enforces
// required pod affinity (the pod must land in a topology domain — a node
// label's value — holding pods its terms select), required anti-affinity
// (no such pods there) and the anti-affinity of pods already placed
// (symmetry). Score adds the weights of preferred terms, the pod's own and
// those of placed pods that select it, per topology domain.
//
// PreFilter counts matching pods per (topology key, value) pair once, so Filter
// is a few map lookups per node; AddPod/RemovePod keep the counts right while
// preemption simulates removing pods.
package interpodaffinity
