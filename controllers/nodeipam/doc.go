// Package nodeipam gives every Node a pod CIDR (spec.podCIDR and spec.podCIDRs) carved out of the
// cluster CIDR, a /24 per node from 10.42.0.0/16 by default (kube-controller-manager's --cluster-cidr
// and --node-cidr-mask-size). The node agent builds its pod bridge on it and routes other nodes' CIDRs
// to them. Allocations already recorded on nodes are loaded before the first allocation, so no CIDR is
// handed out twice, nor one inside a node's CIDR of another size (the mask changed since); a deleted
// node's CIDR is free again. Where the cluster CIDR overlaps the Service IP range (the server's
// --service-cidr, kube-controller-manager's --service-cluster-ip-range), the subnets it touches are
// never handed out.
package nodeipam
