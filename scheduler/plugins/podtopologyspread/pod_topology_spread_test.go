package podtopologyspread

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

const zone = "topology.kubernetes.io/zone"

func web(name string) *v1.Pod { return schedtest.MakePod().Name(name).Label("app", "web").Obj() }

// zones: a has n1 (2 web pods) and n2 (1 web pod); b has n3 (no pods);
// n4 has no zone label.
func zones() []*framework.NodeInfo {
	return []*framework.NodeInfo{
		schedtest.NodeInfo(schedtest.MakeNode().Name("n1").Label(zone, "a").Obj(), web("w1"), web("w2")),
		schedtest.NodeInfo(schedtest.MakeNode().Name("n2").Label(zone, "a").Obj(), web("w3")),
		schedtest.NodeInfo(schedtest.MakeNode().Name("n3").Label(zone, "b").Obj()),
		schedtest.NodeInfo(schedtest.MakeNode().Name("n4").Obj()),
	}
}

func TestPodTopologySpreadFilter(t *testing.T) {
	notMatch := "Unschedulable: " + ErrReasonConstraintsNotMatch
	missing := "UnschedulableAndUnresolvable: " + ErrReasonNodeLabelNotMatch
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]string
	}{
		{
			name: "maxSkew 1 sends the pod to the emptier zone",
			pod:  schedtest.MakePod().Name("new").Label("app", "web").SpreadConstraint(1, zone, v1.DoNotSchedule, "app", "web").Obj(),
			want: map[string]string{"n1": notMatch, "n2": notMatch, "n3": "", "n4": missing},
		},
		{
			name: "maxSkew 4 tolerates the imbalance",
			pod:  schedtest.MakePod().Name("new").Label("app", "web").SpreadConstraint(4, zone, v1.DoNotSchedule, "app", "web").Obj(),
			want: map[string]string{"n1": "", "n2": "", "n3": "", "n4": missing},
		},
		{
			name: "per-node spreading compares nodes, the empty ones setting the minimum",
			pod:  schedtest.MakePod().Name("new").Label("app", "web").SpreadConstraint(1, v1.LabelHostname, v1.DoNotSchedule, "app", "web").Obj(),
			want: map[string]string{"n1": notMatch, "n2": notMatch, "n3": "", "n4": ""},
		},
		{
			name: "a pod its own selector does not pick only checks existing skew",
			pod:  schedtest.MakePod().Name("new").Label("app", "other").SpreadConstraint(2, zone, v1.DoNotSchedule, "app", "web").Obj(),
			want: map[string]string{"n1": notMatch, "n2": notMatch, "n3": "", "n4": missing},
		},
		{
			name: "ScheduleAnyway constraints never filter",
			pod:  schedtest.MakePod().Name("new").Label("app", "web").SpreadConstraint(1, zone, v1.ScheduleAnyway, "app", "web").Obj(),
			want: map[string]string{"n1": "", "n2": "", "n3": "", "n4": ""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nodes := zones()
			p, _ := New(nil, schedtest.Handle(t, nodes...))
			for _, ni := range nodes {
				got := schedtest.StatusString(schedtest.RunFilter(t, p, tc.pod, ni, nodes...))
				if want := tc.want[ni.Node().Name]; got != want {
					t.Errorf("%s: got %q, want %q", ni.Node().Name, got, want)
				}
			}
		})
	}
}

func TestPodTopologySpreadScorePrefersLessCrowdedDomains(t *testing.T) {
	nodes := zones()
	p, _ := New(nil, schedtest.Handle(t, nodes...))
	pod := schedtest.MakePod().Name("new").Label("app", "web").SpreadConstraint(1, zone, v1.ScheduleAnyway, "app", "web").Obj()
	got := schedtest.RunScore(t, p, pod, nodes...)
	if !(got["n3"] > got["n1"] && got["n1"] == got["n2"]) || got["n4"] != 0 || got["n3"] != 100 {
		t.Fatalf("scores = %v, want zone b highest (100), zone a equal and lower, unlabelled 0", got)
	}
}
