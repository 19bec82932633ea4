// Package allocator hands out Service ClusterIPs from --service-cidr and
// NodePorts from their range, with no double allocation across several API
// servers sharing one database.
//
// Each range is one key in the store (as Kubernetes keeps them in etcd): a
// bitmap of the used addresses or ports. Every change is a compare-and-swap on
// that key's revision, so two servers can never both take the same item; in
// one process a mutex serialises the changes so concurrent requests don't all
// collide on the same revision and retry.
package allocator
