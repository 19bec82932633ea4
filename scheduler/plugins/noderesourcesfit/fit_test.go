package noderesourcesfit

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

func fourCPUNode() *v1.Node {
	return schedtest.MakeNode().Name("n").Capacity("cpu", "4", "memory", "8Gi", "pods", "3", "example.com/gpu", "2").Obj()
}

func TestFitFilter(t *testing.T) {
	running := schedtest.MakePod().Name("running").Req("cpu", "2", "memory", "4Gi").Obj()
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		want     string
	}{
		{"a pod within the free resources fits", schedtest.MakePod().Req("cpu", "2", "memory", "4Gi").Obj(), []*v1.Pod{running}, ""},
		{"a pod wanting one CPU too many does not fit", schedtest.MakePod().Req("cpu", "2500m").Obj(), []*v1.Pod{running},
			"Unschedulable: Insufficient cpu"},
		{"every shortfall is reported", schedtest.MakePod().Req("cpu", "3", "memory", "5Gi").Obj(), []*v1.Pod{running},
			"Unschedulable: Insufficient cpu, Insufficient memory"},
		{"an init container bigger than the app containers sets the request",
			schedtest.MakePod().Req("cpu", "1").InitReq("cpu", "3").Obj(), []*v1.Pod{running}, "Unschedulable: Insufficient cpu"},
		{"init containers run one at a time, so they are not summed",
			schedtest.MakePod().Req("cpu", "1").InitReq("cpu", "2").InitReq("cpu", "2").Obj(), []*v1.Pod{running}, ""},
		// Sidecars run beside the app containers, so they add up; an init
		// container after a sidecar runs beside it (1 + 1.5 > 2 free).
		{"a sidecar adds to the app containers", schedtest.MakePod().Req("cpu", "1").SidecarReq("cpu", "1").Obj(), []*v1.Pod{running}, ""},
		{"a sidecar beside the app containers can be too much", schedtest.MakePod().Req("cpu", "1500m").SidecarReq("cpu", "1").Obj(), []*v1.Pod{running},
			"Unschedulable: Insufficient cpu"},
		{"an init container after a sidecar runs beside it",
			schedtest.MakePod().Req("cpu", "500m").SidecarReq("cpu", "1").InitReq("cpu", "1500m").Obj(), []*v1.Pod{running}, "Unschedulable: Insufficient cpu"},
		{"an init container before a sidecar runs alone",
			schedtest.MakePod().Req("cpu", "500m").InitReq("cpu", "1500m").SidecarReq("cpu", "1").Obj(), []*v1.Pod{running}, ""},
		{"pod overhead counts", schedtest.MakePod().Req("cpu", "2").Overhead("cpu", "100m").Obj(), []*v1.Pod{running},
			"Unschedulable: Insufficient cpu"},
		{"the node's pod capacity is a limit", schedtest.MakePod().Obj(),
			[]*v1.Pod{schedtest.MakePod().Name("a").Obj(), schedtest.MakePod().Name("b").Obj(), schedtest.MakePod().Name("c").Obj()},
			"Unschedulable: Too many pods"},
		{"an extended resource within capacity fits", schedtest.MakePod().Req("example.com/gpu", "2").Obj(), nil, ""},
		{"an extended resource beyond capacity does not fit", schedtest.MakePod().Req("example.com/gpu", "3").Obj(), nil,
			"Unschedulable: Insufficient example.com/gpu"},
		{"an extended resource the node lacks does not fit", schedtest.MakePod().Req("example.com/fpga", "1").Obj(), nil,
			"Unschedulable: Insufficient example.com/fpga"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			ni := schedtest.NodeInfo(fourCPUNode(), tc.existing...)
			if got := schedtest.StatusString(schedtest.RunFilter(t, p, tc.pod, ni)); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestIgnoredResourcesAreNotChecked(t *testing.T) {
	// The node has 2 example.com/gpu and no fpga or hugepages.
	tests := []struct {
		name string
		args Args
		pod  *v1.Pod
		want string
	}{
		{"an ignored resource the node lacks", Args{IgnoredResources: []string{"example.com/fpga"}},
			schedtest.MakePod().Req("example.com/fpga", "1").Obj(), ""},
		{"an ignored resource beyond capacity", Args{IgnoredResources: []string{"example.com/gpu"}},
			schedtest.MakePod().Req("example.com/gpu", "3").Obj(), ""},
		{"a resource in an ignored group", Args{IgnoredResourceGroups: []string{"example.com"}},
			schedtest.MakePod().Req("example.com/gpu", "3", "example.com/fpga", "1").Obj(), ""},
		{"other resources are still checked", Args{IgnoredResources: []string{"example.com/fpga"}, IgnoredResourceGroups: []string{"other.io"}},
			schedtest.MakePod().Req("cpu", "5", "example.com/gpu", "3", "example.com/fpga", "1").Obj(), "Unschedulable: Insufficient cpu, Insufficient example.com/gpu"},
		{"a group is a whole domain, not a prefix", Args{IgnoredResourceGroups: []string{"example"}},
			schedtest.MakePod().Req("example.com/gpu", "3").Obj(), "Unschedulable: Insufficient example.com/gpu"},
		{"only extended resources can be ignored", Args{IgnoredResources: []string{"hugepages-2Mi", "cpu"}},
			schedtest.MakePod().Req("cpu", "5", "hugepages-2Mi", "2Mi").Obj(), "Unschedulable: Insufficient cpu, Insufficient hugepages-2Mi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(tc.args, nil)
			if err != nil {
				t.Fatal(err)
			}
			ni := schedtest.NodeInfo(fourCPUNode())
			if got := schedtest.StatusString(schedtest.RunFilter(t, p, tc.pod, ni)); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestScoringStrategyChoosesBetweenSpreadingAndPacking(t *testing.T) {
	node := func(name string) *v1.Node {
		return schedtest.MakeNode().Name(name).Capacity("cpu", "4", "memory", "8Gi").Obj()
	}
	empty := schedtest.NodeInfo(node("empty"))
	busy := schedtest.NodeInfo(node("busy"), schedtest.MakePod().Name("x").Req("cpu", "3", "memory", "6Gi").Obj())
	pod := schedtest.MakePod().Req("cpu", "1", "memory", "2Gi").Obj()
	tests := []struct {
		strategy            ScoringStrategy
		wantEmpty, wantBusy int64
	}{
		{LeastAllocated, 75, 0},
		{MostAllocated, 25, 100},
	}
	for _, tc := range tests {
		t.Run(string(tc.strategy), func(t *testing.T) {
			p, err := New(Args{ScoringStrategy: tc.strategy}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := schedtest.RunScore(t, p, pod, empty, busy)
			if got["empty"] != tc.wantEmpty || got["busy"] != tc.wantBusy {
				t.Fatalf("scores = %v, want empty:%d busy:%d", got, tc.wantEmpty, tc.wantBusy)
			}
		})
	}
}

// A sidecar without requests gets the scoring defaults like an app
// container: 2 × 100m of 1 CPU → 80 free; 2 × 200Mi of 1Gi → 60 free.
func TestRequestlessSidecarsGetScoringDefaults(t *testing.T) {
	node := schedtest.MakeNode().Name("n").Capacity("cpu", "1", "memory", "1Gi").Obj()
	p, _ := New(nil, nil)
	got := schedtest.RunScore(t, p, schedtest.MakePod().SidecarReq().Obj(), schedtest.NodeInfo(node))
	if got["n"] != 70 {
		t.Fatalf("score = %d, want 70", got["n"])
	}
}

func TestRequestlessPodsStillCountWhenScoring(t *testing.T) {
	node := schedtest.MakeNode().Name("n").Capacity("cpu", "1", "memory", "1Gi").Obj()
	crowded := schedtest.NodeInfo(node, schedtest.MakePod().Name("a").Obj(), schedtest.MakePod().Name("b").Obj())
	p, _ := New(nil, nil)
	got := schedtest.RunScore(t, p, schedtest.MakePod().Obj(), crowded)
	// 3 × 100m of 1 CPU used → 70 free; 3 × 200Mi of 1Gi → 41 free; mean 55.
	if got["n"] != 55 {
		t.Fatalf("score = %d, want 55", got["n"])
	}
}

func TestConfiguredResourcesAreScoredByWeight(t *testing.T) {
	node := schedtest.MakeNode().Name("n").Capacity("cpu", "4", "memory", "8Gi", "example.com/gpu", "4", "ephemeral-storage", "10Gi").Obj()
	ni := schedtest.NodeInfo(node, schedtest.MakePod().Name("x").Req("cpu", "1", "example.com/gpu", "2", "ephemeral-storage", "5Gi").Obj())
	pod := schedtest.MakePod().Req("cpu", "1", "example.com/gpu", "1", "ephemeral-storage", "3Gi").Obj()
	tests := []struct {
		name      string
		resources []ResourceWeight
		want      int64
	}{
		// cpu 2 of 4 used → 50 free; gpu 3 of 4 → 25 free: (50×1 + 25×3) / 4.
		{"an extended resource", []ResourceWeight{{v1.ResourceCPU, 1}, {"example.com/gpu", 3}}, 31},
		// ephemeral storage 8 of 10Gi → 20 free; memory (non-zero default 2×200Mi of 8Gi) → 95 free.
		{"ephemeral storage and memory", []ResourceWeight{{v1.ResourceEphemeralStorage, 1}, {v1.ResourceMemory, 1}}, 57},
		// a resource the node does not have is left out of the average.
		{"a resource the node lacks", []ResourceWeight{{v1.ResourceCPU, 1}, {"example.com/fpga", 5}}, 50},
		// kube-scheduler scores only CPU, memory, ephemeral storage and scalar
		// resources: a configured "pods" is left out like a missing resource.
		{"the pod count is not a scored resource", []ResourceWeight{{v1.ResourceCPU, 1}, {v1.ResourcePods, 5}}, 50},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(Args{Resources: tc.resources}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := schedtest.RunScore(t, p, pod, ni); got["n"] != tc.want {
				t.Fatalf("score = %d, want %d", got["n"], tc.want)
			}
		})
	}
}

// A scored extended resource the pod does not ask for is left out, as in
// kube-scheduler: only CPU decides between a node with busy GPUs and one
// with idle GPUs for a pod without GPUs.
func TestUnrequestedExtendedResourcesAreNotScored(t *testing.T) {
	gpus := func(name, used string) *framework.NodeInfo {
		node := schedtest.MakeNode().Name(name).Capacity("cpu", "4", "example.com/gpu", "4").Obj()
		return schedtest.NodeInfo(node, schedtest.MakePod().Name("x").Req("cpu", "1", "example.com/gpu", used).Obj())
	}
	busy, idle := gpus("busy", "4"), gpus("idle", "0")
	pod := schedtest.MakePod().Req("cpu", "1").Obj()
	resources := []ResourceWeight{{v1.ResourceCPU, 1}, {"example.com/gpu", 3}}
	for _, strategy := range []ScoringStrategy{LeastAllocated, MostAllocated} {
		p, err := New(Args{ScoringStrategy: strategy, Resources: resources}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// cpu 2 of 4 used on both: 50 free, 50 used.
		if got := schedtest.RunScore(t, p, pod, busy, idle); got["busy"] != 50 || got["idle"] != 50 {
			t.Errorf("%s: scores %v, want 50 on both nodes", strategy, got)
		}
	}
}

func TestArgsAreValidated(t *testing.T) {
	for _, args := range []any{
		Args{ScoringStrategy: "Random"},
		Args{Resources: []ResourceWeight{{v1.ResourceCPU, 0}}},
		"LeastAllocated",
	} {
		if _, err := New(args, nil); err == nil {
			t.Errorf("New(%v) should fail", args)
		}
	}
	if _, err := New(&Args{ScoringStrategy: MostAllocated}, nil); err != nil {
		t.Errorf("New(*Args): %v", err)
	}
}

var _ framework.ScorePlugin = (*Fit)(nil)

// The constant reasons read exactly as the formatted ones did.
func TestInsufficientReasonsText(t *testing.T) {
	for name, want := range map[v1.ResourceName]string{
		v1.ResourceCPU:              "Insufficient cpu",
		v1.ResourceMemory:           "Insufficient memory",
		v1.ResourceEphemeralStorage: "Insufficient ephemeral-storage",
		"example.com/gpu":           "Insufficient example.com/gpu",
		"hugepages-2Mi":             "Insufficient hugepages-2Mi",
	} {
		if got := ErrReasonInsufficient(name); got != want {
			t.Errorf("ErrReasonInsufficient(%s) = %q, want %q", name, got, want)
		}
	}
}

func BenchmarkFilterInsufficient(b *testing.B) {
	p, _ := New(nil, nil)
	ni := schedtest.NodeInfo(fourCPUNode(), schedtest.MakePod().Name("running").Req("cpu", "3", "memory", "7Gi").Obj())
	pod := schedtest.MakePod().Req("cpu", "2", "memory", "2Gi").Obj()
	state := framework.NewCycleState()
	fit := p.(*Fit)
	fit.PreFilter(context.Background(), state, pod, nil)
	b.ReportAllocs()
	for b.Loop() {
		if s := fit.Filter(context.Background(), state, pod, ni); s.IsSuccess() {
			b.Fatal("the pod should not fit")
		}
	}
}

func TestRequestedToCapacityRatio(t *testing.T) {
	node := func(name string) *v1.Node {
		return schedtest.MakeNode().Name(name).Capacity("cpu", "4", "memory", "8Gi", "example.com/gpu", "4").Obj()
	}
	// After placing the pod (1 CPU, 2Gi): empty uses 25% of both, busy 100%
	// of CPU and 75% of memory.
	empty := schedtest.NodeInfo(node("empty"))
	busy := schedtest.NodeInfo(node("busy"), schedtest.MakePod().Name("x").Req("cpu", "3", "memory", "4Gi").Obj())
	pod := schedtest.MakePod().Req("cpu", "1", "memory", "2Gi").Obj()
	binPack := []ShapePoint{{0, 0}, {100, 10}}
	tests := []struct {
		name                string
		shape               []ShapePoint
		resources           []ResourceWeight
		wantEmpty, wantBusy int64
	}{
		{"a rising shape packs", binPack, nil, 25, 88}, // busy: (100+75)/2 = 87.5, rounded up
		// busy's CPU, full, scores 0 and drops out: memory's 25 is its score.
		{"a falling shape spreads", []ShapePoint{{0, 10}, {100, 0}}, nil, 75, 25},
		// Between points the line is interpolated; outside them it is flat.
		// empty at 25%: 100 × 5/40, truncated, as kube-scheduler's line.
		{"a shape with a knee", []ShapePoint{{20, 0}, {60, 10}}, nil, 12, 100},
		// Below the first point every resource scores 0: no mean, score 0.
		{"flat below the first point", []ShapePoint{{50, 0}, {100, 10}}, nil, 0, 75},
		{"weights", binPack, []ResourceWeight{{v1.ResourceCPU, 3}, {v1.ResourceMemory, 1}}, 25, 94},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(Args{ScoringStrategy: RequestedToCapacityRatio, Shape: tc.shape, Resources: tc.resources}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := schedtest.RunScore(t, p, pod, empty, busy)
			if got["empty"] != tc.wantEmpty || got["busy"] != tc.wantBusy {
				t.Fatalf("scores = %v, want empty:%d busy:%d", got, tc.wantEmpty, tc.wantBusy)
			}
		})
	}
}

func TestRequestedToCapacityRatioShapeIsValidated(t *testing.T) {
	for _, shape := range [][]ShapePoint{
		nil,
		{{50, 5}, {50, 6}},
		{{60, 5}, {40, 6}},
		{{101, 5}},
		{{-1, 5}},
		{{50, 11}},
		{{50, -1}},
	} {
		if _, err := New(Args{ScoringStrategy: RequestedToCapacityRatio, Shape: shape}, nil); err == nil {
			t.Errorf("shape %v should be refused", shape)
		}
	}
	if _, err := New(Args{ScoringStrategy: MostAllocated, Shape: []ShapePoint{{0, 0}}}, nil); err == nil {
		t.Error("a shape with MostAllocated should be refused")
	}
}

// The scoring defaults apply per container, sidecars and init containers
// included, before the init/sidecar arithmetic, as kube-scheduler's
// component-helpers request sum does. The pod: app 500m (no memory → 200Mi),
// a request-less sidecar (→ 100m/200Mi), then an init container of 1 CPU/1Gi
// that runs beside the sidecar (1100m/1224Mi). The max of the running set
// (600m/400Mi) and the init phase is 1100m/1224Mi; with a request-less pod
// already there (100m/200Mi): CPU 1200m of 4 → 70 free, memory 1424Mi of
// 8Gi → 82 free; mean 76.
func TestScoringDefaultsWithInitContainersAndSidecars(t *testing.T) {
	node := schedtest.MakeNode().Name("n").Capacity("cpu", "4", "memory", "8Gi").Obj()
	ni := schedtest.NodeInfo(node, schedtest.MakePod().Name("bare").Obj())
	pod := schedtest.MakePod().Req("cpu", "500m").SidecarReq().InitReq("cpu", "1", "memory", "1Gi").Obj()
	p, _ := New(nil, nil)
	if got := schedtest.RunScore(t, p, pod, ni); got["n"] != 76 {
		t.Fatalf("score = %d, want 76", got["n"])
	}
}
