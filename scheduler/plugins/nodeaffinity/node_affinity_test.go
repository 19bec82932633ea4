package nodeaffinity

import (
	"context"
	"slices"
	"sort"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
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

func nameTerm(names ...[]string) v1.NodeSelectorTerm {
	var t v1.NodeSelectorTerm
	for _, values := range names {
		t.MatchFields = append(t.MatchFields, v1.NodeSelectorRequirement{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: values})
	}
	return t
}

func withRequired(terms ...v1.NodeSelectorTerm) *v1.Pod {
	pod := schedtest.MakePod().Obj()
	pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms},
	}}
	return pod
}

// Terms naming nodes narrow the nodes to filter, as kube-scheduler's PreFilter.
func TestNodeAffinityPreFilterNarrowsToNamedNodes(t *testing.T) {
	labelTerm := v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"a"}}}}
	tests := []struct {
		name   string
		pod    *v1.Pod
		want   []string // nil: all nodes
		status string
	}{
		{"a DaemonSet pod's term names its node", withRequired(nameTerm([]string{"n1"})), []string{"n1"}, ""},
		{"ORed terms add up", withRequired(nameTerm([]string{"n1"}), nameTerm([]string{"n2", "n3"})), []string{"n1", "n2", "n3"}, ""},
		{"ANDed requirements intersect", withRequired(nameTerm([]string{"n1", "n2"}, []string{"n2", "n3"})), []string{"n2"}, ""},
		{"a term without names lets every node through", withRequired(nameTerm([]string{"n1"}), labelTerm), nil, ""},
		{"a nodeSelector alone narrows nothing", schedtest.MakePod().NodeSelector("disk", "ssd").Obj(), nil, ""},
		{"requirements no node satisfies", withRequired(nameTerm([]string{"n1"}, []string{"n2"})), nil,
			"UnschedulableAndUnresolvable: " + ErrReasonConflict},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := New(nil, nil)
			r, s := p.(*NodeAffinity).PreFilter(context.Background(), framework.NewCycleState(), tc.pod, nil)
			if got := schedtest.StatusString(s); got != tc.status {
				t.Fatalf("status %q, want %q", got, tc.status)
			}
			var got []string
			if r != nil {
				for n := range r.NodeNames {
					got = append(got, n)
				}
				sort.Strings(got)
			}
			if !slices.Equal(got, tc.want) || (r == nil) != (tc.want == nil) {
				t.Fatalf("nodes %v (result %v), want %v", got, r, tc.want)
			}
		})
	}
}
