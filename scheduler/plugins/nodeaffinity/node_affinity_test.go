package nodeaffinity

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/schedtest"
)

func TestNodeAffinityFilter(t *testing.T) {
	ssd := schedtest.MakeNode().Name("n").Label("disk", "ssd").Label("zone", "a").Obj()
	tests := []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{"a pod without selector or affinity fits", schedtest.MakePod().Obj(), ""},
		{"a matching nodeSelector fits", schedtest.MakePod().NodeSelector("disk", "ssd").Obj(), ""},
		{"a nodeSelector with another value does not fit", schedtest.MakePod().NodeSelector("disk", "hdd").Obj(),
			"UnschedulableAndUnresolvable: " + ErrReasonPod},
		{"required affinity In a matching value fits", schedtest.MakePod().RequiredNodeAffinityIn("zone", "a", "b").Obj(), ""},
		{"required affinity In other values does not fit", schedtest.MakePod().RequiredNodeAffinityIn("zone", "c").Obj(),
			"UnschedulableAndUnresolvable: " + ErrReasonPod},
		{"selector and affinity must both match",
			schedtest.MakePod().NodeSelector("disk", "ssd").RequiredNodeAffinityIn("zone", "c").Obj(),
			"UnschedulableAndUnresolvable: " + ErrReasonPod},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := New(nil, nil)
			if got := schedtest.StatusString(schedtest.RunFilter(t, p, tc.pod, schedtest.NodeInfo(ssd))); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNodeAffinityScoreSumsPreferredWeights(t *testing.T) {
	both := schedtest.NodeInfo(schedtest.MakeNode().Name("both").Label("disk", "ssd").Label("zone", "a").Obj())
	zone := schedtest.NodeInfo(schedtest.MakeNode().Name("zone").Label("zone", "a").Obj())
	none := schedtest.NodeInfo(schedtest.MakeNode().Name("none").Obj())
	pod := schedtest.MakePod().PreferredNodeAffinityIn(3, "disk", "ssd").PreferredNodeAffinityIn(1, "zone", "a").Obj()
	p, _ := New(nil, nil)
	got := schedtest.RunScore(t, p, pod, both, zone, none)
	if got["both"] != 100 || got["zone"] != 25 || got["none"] != 0 {
		t.Fatalf("scores = %v, want both:100 zone:25 none:0", got)
	}
	if s := schedtest.RunScore(t, p, schedtest.MakePod().Obj(), both); s != nil {
		t.Fatalf("a pod without preferences should skip scoring, got %v", s)
	}
}
