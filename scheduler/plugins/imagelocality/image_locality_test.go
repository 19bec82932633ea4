package imagelocality

import (
	"testing"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

func TestImageLocalityFavoursNodesHoldingLargeImages(t *testing.T) {
	const mb = 1024 * 1024
	withImage := func(name string) *framework.NodeInfo {
		ni := schedtest.NodeInfo(schedtest.MakeNode().Name(name).Obj())
		ni.ImageStates = map[string]*framework.ImageStateSummary{"registry.local/app:1.0": {Size: 523 * mb, NumNodes: 2}}
		return ni
	}
	a, b := withImage("a"), withImage("b")
	bare := schedtest.NodeInfo(schedtest.MakeNode().Name("bare").Obj())
	h := schedtest.Handle(t, a, b, bare)
	p, _ := New(nil, h)
	got := schedtest.RunScore(t, p, schedtest.MakePod().Image("registry.local/app:1.0").Obj(), a, b, bare)
	// 523MB × 2/3 of the nodes ≈ 348MB: (348-23)/(1000-23) of 100.
	if got["a"] != 33 || got["b"] != 33 || got["bare"] != 0 {
		t.Fatalf("scores = %v, want a:33 b:33 bare:0", got)
	}
}

func TestNormalizedImageName(t *testing.T) {
	for in, want := range map[string]string{
		"nginx":                "nginx:latest",
		"nginx:1.27":           "nginx:1.27",
		"registry:5000/app":    "registry:5000/app:latest",
		"registry:5000/app:v1": "registry:5000/app:v1",
		"nginx@sha256:abcd":    "nginx@sha256:abcd",
	} {
		if got := NormalizedImageName(in); got != want {
			t.Errorf("NormalizedImageName(%q) = %q, want %q", in, got, want)
		}
	}
}
