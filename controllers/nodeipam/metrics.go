package nodeipam

import "github.com/prometheus/client_golang/prometheus"

// The allocator's metrics, with kube-controller-manager's names, help texts and clusterCIDR label
// (the cluster CIDR's own misspelling "cirdset" in the maximum's name included, so dashboards and
// alerts written for Kubernetes read them). They count from the start of the process; a process
// serving /metrics registers Collectors.
var (
	cidrAllocations = prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "node_ipam_controller", Name: "cidrset_cidrs_allocations_total",
		Help: "Counter measuring total number of CIDR allocations."}, []string{"clusterCIDR"})
	cidrReleases = prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "node_ipam_controller", Name: "cidrset_cidrs_releases_total",
		Help: "Counter measuring total number of CIDR releases."}, []string{"clusterCIDR"})
	cidrMax = prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "node_ipam_controller", Name: "cirdset_max_cidrs",
		Help: "Maximum number of CIDRs that can be allocated."}, []string{"clusterCIDR"})
	// A share from 0 to 1, whatever Kubernetes' help text says.
	cidrUsage = prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "node_ipam_controller", Name: "cidrset_usage_cidrs",
		Help: "Gauge measuring percentage of allocated CIDRs."}, []string{"clusterCIDR"})
	// Kubernetes' help text is a copy-paste slip; this is the number of taken subnets an allocation
	// passed over before it found a free one.
	cidrAllocationTries = prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "node_ipam_controller", Name: "cidrset_allocation_tries_per_request",
		Help: "Number of endpoints added on each Service sync", Buckets: prometheus.ExponentialBuckets(1, 5, 5)}, []string{"clusterCIDR"})
)

// Collectors are node_ipam_controller_cidrset_cidrs_allocations_total, _cidrs_releases_total,
// _usage_cidrs, _allocation_tries_per_request and node_ipam_controller_cirdset_max_cidrs.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{cidrAllocations, cidrReleases, cidrMax, cidrUsage, cidrAllocationTries}
}
