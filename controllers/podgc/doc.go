// Package podgc deletes pods nobody else will: terminated pods beyond a threshold (oldest first),
// pods bound to nodes that no longer exist (after a quarantine, confirmed with a live read of the
// node), and pods that are being deleted but were never scheduled (no kubelet will finish them).
// It runs as a periodic sweep over the informer caches, as Kubernetes' pod garbage collector.
package podgc
