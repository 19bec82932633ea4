package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Node IPAM splits --cluster-cidr into pod CIDRs of --node-cidr-mask-size
// bits, as kube-controller-manager does: a /24 into four /26s for the
// first four of five hollow nodes. The fifth gets none and a
// CIDRNotAvailable event, and a pod on a node takes the first address of
// its /26 after the gateway's.
func TestNodeCIDRMaskSize(t *testing.T) {
	s := startServer(t, "--cluster-cidr", "10.77.0.0/24", "--node-cidr-mask-size", "26")
	k := newKubectl(t, s, 33)
	startHollowNodes(t, s, "--count", "5", "--node-name", "ipam", "--node-label", "test=ipam")

	list := []string{"get", "nodes", "-l", "test=ipam", "-o", `jsonpath={range .items[*]}{.metadata.name}={.spec.podCIDR}{"\n"}{end}`}
	out := waitFor(t, k, 60*time.Second, "five nodes, four with pod CIDRs", func(out string) bool {
		return len(strings.Fields(out)) == 5 && strings.Count(out, "=10.") == 4
	}, list...)
	var cidrs []string
	var starved string
	byCIDR := map[string]string{}
	for _, line := range strings.Fields(out) {
		name, cidr, _ := strings.Cut(line, "=")
		if cidr == "" {
			starved = name
			continue
		}
		cidrs = append(cidrs, cidr)
		byCIDR[cidr] = name
	}
	slices.Sort(cidrs)
	if want := []string{"10.77.0.0/26", "10.77.0.128/26", "10.77.0.192/26", "10.77.0.64/26"}; !slices.Equal(cidrs, want) {
		t.Fatalf("pod CIDRs %v, want the four /26s of 10.77.0.0/24 %v", cidrs, want)
	}
	eventually(t, k, []string{"CIDRNotAvailable", "Node " + starved + " status is now: CIDRNotAvailable"},
		"get", "events", "--field-selector", "involvedObject.name="+starved, "-o", "custom-columns=REASON:.reason,MESSAGE:.message")
	// The allocator keeps trying: still none a while later, and no node got a second CIDR.
	time.Sleep(2 * time.Second)
	if got := k.ok(list...); strings.Count(got, "=10.") != 4 || !strings.Contains(got, starved+"=\n") {
		t.Errorf("after a while:\n%s", got)
	}

	// kube-controller-manager's allocator metrics, on the server's /metrics: all four of four in use.
	contains(t, "node IPAM metrics", k.ok("get", "--raw", "/metrics"),
		`node_ipam_controller_cirdset_max_cidrs{clusterCIDR="10.77.0.0/24"} 4`,
		`node_ipam_controller_cidrset_usage_cidrs{clusterCIDR="10.77.0.0/24"} 1`,
		`node_ipam_controller_cidrset_cidrs_allocations_total{clusterCIDR="10.77.0.0/24"} 4`)

	node := byCIDR["10.77.0.128/26"]
	k.okIn(`apiVersion: v1
kind: Pod
metadata: {name: addressed, namespace: default}
spec:
  nodeName: `+node+`
  terminationGracePeriodSeconds: 1
  containers: [{name: app, image: example.com/web:1}]
`, "apply", "-f", "-")
	waitFor(t, k, 60*time.Second, "the pod running with the first pod address of "+node+"'s /26", func(out string) bool {
		return out == "Running 10.77.0.130"
	}, "get", "pod", "addressed", "-o", "jsonpath={.status.phase} {.status.podIP}")
}
