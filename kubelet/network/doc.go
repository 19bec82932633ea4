// Package network gives each pod on this node its own network: a named
// network namespace (/var/run/netns/<prefix><pod>), a veth pair whose host end
// is enslaved to the node bridge and whose other end is eth0 inside the
// namespace, an address from the node's pod CIDR and a default route via the
// bridge's gateway address. Containers of the pod join the namespace by path.
//
// Addresses are handed out by a small file-backed allocator (one file per
// address in use, holding the pod's ID), so an agent restart never hands a
// live pod's address to another pod. TearDown removes everything SetUp made;
// both are idempotent so a sync loop can call them again after a crash.
package network
