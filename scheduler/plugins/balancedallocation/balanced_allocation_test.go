package balancedallocation

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/schedtest"
)

func TestBalancedAllocationPrefersEvenUse(t *testing.T) {
	node := func(name string) *schedtest.NodeWrapper {
		return schedtest.MakeNode().Name(name).Capacity("cpu", "4", "memory", "4Gi")
	}
	// After placing the pod (1 CPU, 1Gi): even uses 50%/50%, skewed 100%/25%.
	even := schedtest.NodeInfo(node("even").Obj(), schedtest.MakePod().Name("x").Req("cpu", "1", "memory", "1Gi").Obj())
	skewed := schedtest.NodeInfo(node("skewed").Obj(), schedtest.MakePod().Name("x").Req("cpu", "3").Obj())
	p, _ := New(nil, nil)
	got := schedtest.RunScore(t, p, schedtest.MakePod().Req("cpu", "1", "memory", "1Gi").Obj(), even, skewed)
	if got["even"] != 100 || got["skewed"] != 62 {
		t.Fatalf("scores = %v, want even:100 skewed:62", got)
	}
}

func TestBalancedAllocationEdgeCases(t *testing.T) {
	pod := schedtest.MakePod().Req("cpu", "2", "memory", "1Gi").Obj()
	tests := []struct {
		name string
		node *schedtest.NodeWrapper
		want int64
	}{
		// 2 of 1 CPU counts as full: |1 - 0.25| / 2 off perfect balance.
		{"a fraction above one counts as one", schedtest.MakeNode().Capacity("cpu", "1", "memory", "4Gi"), 62},
		// Only CPU is known, so there is nothing to balance against.
		{"a node without memory is balanced", schedtest.MakeNode().Capacity("cpu", "4"), 100},
		{"a node with neither is balanced", schedtest.MakeNode(), 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := New(nil, nil)
			got := schedtest.RunScore(t, p, pod, schedtest.NodeInfo(tc.node.Name("n").Obj()))
			if got["n"] != tc.want {
				t.Fatalf("score = %d, want %d", got["n"], tc.want)
			}
		})
	}
}

func TestBalancedAllocationSkipsPodsWithoutRequests(t *testing.T) {
	// A pod requesting neither CPU nor memory changes no node's balance; were
	// it scored, every such pod would chase the same best-balanced node
	// (kube-scheduler skips them, kubernetes/kubernetes#129138).
	tests := []struct {
		name     string
		pod      *v1.Pod
		wantSkip bool
	}{
		{"a pod without requests is not scored", schedtest.MakePod().Obj(), true},
		{"a pod requesting only ephemeral storage is not scored", schedtest.MakePod().Req("ephemeral-storage", "1Gi").Obj(), true},
		{"a pod requesting CPU is scored", schedtest.MakePod().Req("cpu", "100m").Obj(), false},
		{"a pod requesting memory is scored", schedtest.MakePod().Req("memory", "1Gi").Obj(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := New(nil, nil)
			ni := schedtest.NodeInfo(schedtest.MakeNode().Name("n").Capacity("cpu", "4", "memory", "4Gi").Obj(),
				schedtest.MakePod().Name("x").Req("cpu", "3").Obj())
			got := schedtest.RunScore(t, p, tc.pod, ni)
			if skipped := got == nil; skipped != tc.wantSkip {
				t.Fatalf("scores = %v, want skipped %v", got, tc.wantSkip)
			}
		})
	}
}

func TestBalancedAllocationConfiguredResources(t *testing.T) {
	node := schedtest.MakeNode().Name("n").Capacity("cpu", "4", "memory", "4Gi", "ephemeral-storage", "4Gi", "example.com/gpu", "4").Obj()
	ni := schedtest.NodeInfo(node, schedtest.MakePod().Name("x").Req("cpu", "1", "ephemeral-storage", "3Gi", "example.com/gpu", "1").Obj())
	tests := []struct {
		name      string
		resources []v1.ResourceName
		pod       *v1.Pod
		want      int64
	}{
		// cpu 2/4, memory 1/4, storage 4/4: mean 7/12, std √(7/72) ≈ 0.312.
		{"three resources use the standard deviation",
			[]v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage},
			schedtest.MakePod().Req("cpu", "1", "memory", "1Gi", "ephemeral-storage", "1Gi").Obj(), 68},
		// cpu 2/4 and gpu 2/4 balance perfectly.
		{"a requested extended resource", []v1.ResourceName{v1.ResourceCPU, "example.com/gpu"},
			schedtest.MakePod().Req("cpu", "1", "example.com/gpu", "1").Obj(), 100},
		// The gpu, not requested, is left out: only cpu remains.
		{"an unrequested extended resource is left out", []v1.ResourceName{v1.ResourceCPU, "example.com/gpu", v1.ResourcePods},
			schedtest.MakePod().Req("cpu", "3").Obj(), 100},
		// cpu 2/4 against storage 3/4 (the pod asks for no storage).
		{"storage the pod does not request still counts", []v1.ResourceName{v1.ResourceCPU, v1.ResourceEphemeralStorage},
			schedtest.MakePod().Req("cpu", "1").Obj(), 87},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(Args{Resources: tc.resources}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := schedtest.RunScore(t, p, tc.pod, ni); got["n"] != tc.want {
				t.Fatalf("score = %v, want %d", got, tc.want)
			}
		})
	}
	// A pod requesting none of the configured resources is not scored,
	// even if it requests CPU.
	p, _ := New(Args{Resources: []v1.ResourceName{"example.com/gpu"}}, nil)
	if got := schedtest.RunScore(t, p, schedtest.MakePod().Req("cpu", "1").Obj(), ni); got != nil {
		t.Fatalf("scores = %v, want the pod skipped", got)
	}
}
