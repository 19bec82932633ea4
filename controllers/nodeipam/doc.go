// Package nodeipam gives every Node a pod CIDR (spec.podCIDR and spec.podCIDRs) carved out of the
// cluster CIDR, a /24 per node from 10.42.0.0/16 by default. The node agent builds its pod bridge on it
// and routes other nodes' CIDRs to them. Allocations already recorded on nodes are loaded before the
// first allocation, so no CIDR is handed out twice; a deleted node's CIDR is free again.
package nodeipam
