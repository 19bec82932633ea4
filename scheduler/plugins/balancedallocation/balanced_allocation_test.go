package balancedallocation

import (
	"testing"

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
