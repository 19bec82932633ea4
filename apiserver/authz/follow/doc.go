// Package follow keeps an in-memory view of one key prefix of the store:
// it lists the prefix, then applies every change from a watch, relisting
// when a compaction leaves a gap. The authorizers' caches (RBAC roles and
// bindings, the node authorizer's pod graph) are built on it.
package follow
