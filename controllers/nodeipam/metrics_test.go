package nodeipam

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// kube-controller-manager's node_ipam_controller_cidrset_* metrics, by cluster CIDR: subnets taken
// (allocated, or occupied for a node or the Service range) and freed, how many there are and what
// share is in use, and how many taken subnets each allocation passed over.
func TestCIDRSetMetrics(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(Collectors()...)
	// Counters and the histogram carry over from earlier runs (-count):
	// what this run adds is compared.
	before := gather(t, reg, "10.99.0.0/22")
	// A cluster CIDR of its own: the metrics are the process's, shared with the other tests.
	c, _, f := newFixture(t, Options{ClusterCIDR: "10.99.0.0/22", NodeMaskSize: 24, ServiceCIDR: "10.99.1.0/24"},
		node("old", "10.99.0.0/24"), node("a", ""), node("b", ""), node("c", ""))
	for _, n := range []string{"a", "b"} {
		if err := c.sync(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.sync(ctx, "c"); !errors.Is(err, ErrExhausted) {
		t.Fatalf("c: %v, want ErrExhausted", err)
	}
	if err := f.Core().V1().Nodes().Informer().GetIndexer().Delete(node("a", "")); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	// Taken: the Service range's, old's, a's and b's; freed: a's. The allocator starts at the first
	// subnet: a passed over old's and the Service range's, b none.
	got := gather(t, reg, "10.99.0.0/22")
	for name, want := range map[string]float64{
		"node_ipam_controller_cidrset_cidrs_allocations_total":            4,
		"node_ipam_controller_cidrset_cidrs_releases_total":               1,
		"node_ipam_controller_cidrset_usage_cidrs":                        0.75,
		"node_ipam_controller_cirdset_max_cidrs":                          4, // sic, as Kubernetes spells it
		"node_ipam_controller_cidrset_allocation_tries_per_request_count": 2,
		"node_ipam_controller_cidrset_allocation_tries_per_request_sum":   2,
	} {
		if name != "node_ipam_controller_cidrset_usage_cidrs" && name != "node_ipam_controller_cirdset_max_cidrs" {
			want += before[name]
		}
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
		}
	}
}

// gather reads the registry's metrics for one cluster CIDR, a histogram as its _count and _sum.
func gather(t *testing.T, reg *prometheus.Registry, clusterCIDR string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != 1 || m.GetLabel()[0].GetName() != "clusterCIDR" || m.GetLabel()[0].GetValue() != clusterCIDR {
				continue
			}
			switch {
			case m.Counter != nil:
				got[mf.GetName()] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				got[mf.GetName()] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				got[mf.GetName()+"_count"] = float64(m.GetHistogram().GetSampleCount())
				got[mf.GetName()+"_sum"] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return got
}
