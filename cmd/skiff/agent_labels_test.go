package main

import (
	"strings"
	"testing"
)

// --node-label is judged as the kubelet judges --node-labels, before
// anything starts: malformed keys and values, and the kubernetes.io labels
// a node may not set on itself (the API server would refuse the node's
// registration for them), are refused naming the flag; the kubelet's own
// labels and its two prefixes are kept.
func TestParseLabels(t *testing.T) {
	for _, in := range [][]string{
		{"node-role.kubernetes.io/worker="},
		{"tier=web", "example.k8s.io/x=y"},
		{"node-restriction.kubernetes.io/pool=a"},
		{"bad key=x"},
		{"tier=" + strings.Repeat("v", 64)},
		{"noequals"},
	} {
		if _, err := parseLabels(in); err == nil || !strings.Contains(err.Error(), "invalid --node-label") {
			t.Errorf("parseLabels(%q) = %v, want an invalid --node-label error", in, err)
		}
	}
	in := []string{"tier=web", "topology.kubernetes.io/zone=a", "node.kubernetes.io/instance-type=big",
		"kubelet.kubernetes.io/x=1", "pool.node.kubernetes.io/y=2", "example.com/role=edge"}
	got, err := parseLabels(in)
	if err != nil || len(got) != len(in) {
		t.Fatalf("parseLabels(%q) = %v, %v; want all kept", in, got, err)
	}
}
