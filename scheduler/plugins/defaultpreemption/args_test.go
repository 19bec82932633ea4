package defaultpreemption

import (
	"testing"

	"k8s.io/utils/ptr"
)

// As kube-scheduler's ValidateDefaultPreemptionArgs, after defaulting.
func TestArgsValidate(t *testing.T) {
	tests := []struct {
		name string
		args Args
		want string
	}{
		{"no args are the defaults", Args{}, ""},
		{"a percentage of zero, the absolute number defaulted", Args{MinCandidateNodesPercentage: ptr.To[int32](0)}, ""},
		{"an absolute number of zero, the percentage defaulted", Args{MinCandidateNodesAbsolute: ptr.To[int32](0)}, ""},
		{"a whole percentage", Args{MinCandidateNodesPercentage: ptr.To[int32](100), MinCandidateNodesAbsolute: ptr.To[int32](0)}, ""},
		{"a percentage above 100", Args{MinCandidateNodesPercentage: ptr.To[int32](101)},
			"minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]"},
		{"a negative percentage", Args{MinCandidateNodesPercentage: ptr.To[int32](-1)},
			"minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100]"},
		{"a negative absolute number", Args{MinCandidateNodesAbsolute: ptr.To[int32](-1)},
			"minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)"},
		{"both zero", Args{MinCandidateNodesPercentage: ptr.To[int32](0), MinCandidateNodesAbsolute: ptr.To[int32](0)},
			"[minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute, " +
				"minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if err := tc.args.Validate(); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Validate() = %q, want %q", got, tc.want)
			}
		})
	}
}

// As kube-scheduler's calculateNumCandidates: the share of the nodes, at
// least the absolute number, at most every node.
func TestNumCandidates(t *testing.T) {
	tests := []struct {
		name     string
		pct, abs int32
		nodes    int
		want     int
	}{
		{"the defaults on a small cluster take every node", 10, 100, 10, 10},
		{"the defaults on a big cluster take the absolute number", 10, 100, 500, 100},
		{"the defaults on a huge cluster take the share", 10, 100, 5000, 500},
		{"a share only", 40, 0, 10, 4},
		{"a share rounding down to zero still takes one", 1, 0, 50, 1},
		{"an absolute number only", 0, 3, 10, 3},
		{"an absolute number above the node count", 0, 30, 10, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := Args{MinCandidateNodesPercentage: ptr.To(tc.pct), MinCandidateNodesAbsolute: ptr.To(tc.abs)}
			if got := a.numCandidates(tc.nodes); got != tc.want {
				t.Errorf("numCandidates(%d) = %d, want %d", tc.nodes, got, tc.want)
			}
		})
	}
}
