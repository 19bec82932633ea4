package imagelocality

import (
	"fmt"
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

// An image's share is its size times its spread (the fraction of nodes
// holding it), truncated to whole bytes, as kube-scheduler computes it:
// size × (nodes/total), not (size × nodes)/total. The two differ in the last
// bit for some sizes (90 bytes on 7 of 10 nodes: 62 against 63), and a byte
// can tip the score across a whole point. Here the second image, on every
// node, brings the sum to one byte short of the 25-point mark under
// kube-scheduler's arithmetic.
func TestImageLocalitySpreadScalesTheSizeAsKubeScheduler(t *testing.T) {
	const (
		mb    = int64(1024 * 1024)
		total = 10
	)
	maxSum := 2 * 1000 * mb // two containers
	mark := 23*mb + (maxSum-23*mb)/4
	if 100*(mark-23*mb)%(maxSum-23*mb) != 0 {
		t.Fatalf("mark %d is not an exact score", mark)
	}
	var infos []*framework.NodeInfo
	for i := range total {
		ni := schedtest.NodeInfo(schedtest.MakeNode().Name(fmt.Sprintf("n%d", i)).Obj())
		ni.ImageStates = map[string]*framework.ImageStateSummary{
			"small:1": {Size: 90, NumNodes: 7},
			"big:1":   {Size: mark - 63, NumNodes: total},
		}
		infos = append(infos, ni)
	}
	h := schedtest.Handle(t, infos...)
	p, _ := New(nil, h)
	pod := schedtest.MakePod().Image("small:1").Container("big:1").Obj()
	got := schedtest.RunScore(t, p, pod, infos[0])
	// 90 × 0.7 in float64 is 62.99…: the sum is mark-1, just under 25.
	if got["n0"] != 24 {
		t.Fatalf("score = %d, want 24 (kube-scheduler's size × spread)", got["n0"])
	}
}
