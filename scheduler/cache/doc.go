// Package cache keeps the scheduler's picture of the cluster: one NodeInfo
// per node, built from the node and pod informers, plus the pods the
// scheduler has "assumed" onto a node (after Reserve, before the informer
// reports the binding). Counting assumed pods is what keeps a burst of
// scheduling decisions from overcommitting a node while binds are in flight.
//
// Assumed pods leave the cache in one of three ways: the informer reports the
// pod bound (AddPod confirms it), binding fails (ForgetPod), or binding
// succeeded but no confirmation arrived within the TTL (Cleanup expires it).
//
// Each attempt reads an immutable Snapshot; UpdateSnapshot copies only the
// nodes whose generation moved since the last copy.
package cache
