// Package podgc deletes pods nobody else will: terminated pods beyond a threshold (oldest first),
// pods bound to nodes that no longer exist (after a quarantine, confirmed with a live read of the
// node), pods that are being deleted but were never scheduled (no kubelet will finish them), and
// pods terminating on a NotReady node tainted node.kubernetes.io/out-of-service (non-graceful node
// shutdown).
// It runs as a periodic sweep over the informer caches, as Kubernetes' pod garbage collector.
package podgc
