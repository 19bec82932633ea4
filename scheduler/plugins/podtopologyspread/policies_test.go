package podtopologyspread

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// spreadByZone is a web pod spreading over zones with maxSkew 1, changed by set.
func spreadByZone(when v1.UnsatisfiableConstraintAction, set func(*v1.Pod, *v1.TopologySpreadConstraint)) *v1.Pod {
	p := schedtest.MakePod().Name("new").Label("app", "web").SpreadConstraint(1, zone, when, "app", "web").Obj()
	if set != nil {
		set(p, &p.Spec.TopologySpreadConstraints[0])
	}
	return p
}

// The fields of a constraint beyond its key and skew, as kube-scheduler's
// filterTopologySpreadConstraints reads them: minDomains (1 when unset),
// nodeAffinityPolicy (Honor when unset), nodeTaintsPolicy (Ignore when unset)
// and matchLabelKeys (merged into the selector with the pod's values).
func TestPodTopologySpreadFilterConstraintFields(t *testing.T) {
	notMatch := "Unschedulable: " + ErrReasonConstraintsNotMatch
	// one web pod in zone a, one in zone b
	even := func() []*framework.NodeInfo {
		return []*framework.NodeInfo{
			schedtest.NodeInfo(schedtest.MakeNode().Name("a").Label(zone, "a").Obj(), web("w1")),
			schedtest.NodeInfo(schedtest.MakeNode().Name("b").Label(zone, "b").Obj(), web("w2")),
		}
	}
	// one web pod in zone a; zone b's only node is tainted (or, with
	// pool, outside the pod's node selector)
	lopsided := func(b *schedtest.NodeWrapper) []*framework.NodeInfo {
		return []*framework.NodeInfo{
			schedtest.NodeInfo(schedtest.MakeNode().Name("a").Label(zone, "a").Label("pool", "x").Obj(), web("w1")),
			schedtest.NodeInfo(b.Name("b").Label(zone, "b").Obj()),
		}
	}
	tainted := func() *schedtest.NodeWrapper { return schedtest.MakeNode().Taint("k", "v", v1.TaintEffectNoSchedule) }
	tests := []struct {
		name  string
		pod   *v1.Pod
		nodes []*framework.NodeInfo
		want  map[string]string
	}{
		{
			name:  "fewer domains than minDomains make the global minimum 0",
			pod:   spreadByZone(v1.DoNotSchedule, func(_ *v1.Pod, c *v1.TopologySpreadConstraint) { c.MinDomains = ptr.To[int32](3) }),
			nodes: even(),
			want:  map[string]string{"a": notMatch, "b": notMatch},
		},
		{
			name:  "as many domains as minDomains keep the real minimum",
			pod:   spreadByZone(v1.DoNotSchedule, func(_ *v1.Pod, c *v1.TopologySpreadConstraint) { c.MinDomains = ptr.To[int32](2) }),
			nodes: even(),
			want:  map[string]string{"a": "", "b": ""},
		},
		{
			name:  "a tainted node's domain counts by default",
			pod:   spreadByZone(v1.DoNotSchedule, nil),
			nodes: lopsided(tainted()),
			want:  map[string]string{"a": notMatch, "b": ""},
		},
		{
			name: "nodeTaintsPolicy Honor leaves out the nodes whose taints the pod does not tolerate",
			pod: spreadByZone(v1.DoNotSchedule, func(_ *v1.Pod, c *v1.TopologySpreadConstraint) {
				c.NodeTaintsPolicy = ptr.To(v1.NodeInclusionPolicyHonor)
			}),
			nodes: lopsided(tainted()),
			want:  map[string]string{"a": "", "b": ""},
		},
		{
			name: "nodeTaintsPolicy Honor counts a node whose taints the pod tolerates",
			pod: spreadByZone(v1.DoNotSchedule, func(p *v1.Pod, c *v1.TopologySpreadConstraint) {
				c.NodeTaintsPolicy = ptr.To(v1.NodeInclusionPolicyHonor)
				p.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}}
			}),
			nodes: lopsided(tainted()),
			want:  map[string]string{"a": notMatch, "b": ""},
		},
		{
			name:  "the nodes outside the pod's node selector are left out by default",
			pod:   spreadByZone(v1.DoNotSchedule, func(p *v1.Pod, _ *v1.TopologySpreadConstraint) { p.Spec.NodeSelector = map[string]string{"pool": "x"} }),
			nodes: lopsided(schedtest.MakeNode()),
			want:  map[string]string{"a": "", "b": ""},
		},
		{
			name: "nodeAffinityPolicy Ignore counts them",
			pod: spreadByZone(v1.DoNotSchedule, func(p *v1.Pod, c *v1.TopologySpreadConstraint) {
				p.Spec.NodeSelector = map[string]string{"pool": "x"}
				c.NodeAffinityPolicy = ptr.To(v1.NodeInclusionPolicyIgnore)
			}),
			nodes: lopsided(schedtest.MakeNode()),
			want:  map[string]string{"a": notMatch, "b": ""},
		},
		{
			name: "matchLabelKeys select only the pods with the pod's value",
			pod: spreadByZone(v1.DoNotSchedule, func(p *v1.Pod, c *v1.TopologySpreadConstraint) {
				p.Labels["hash"] = "new"
				c.MatchLabelKeys = []string{"hash"}
			}),
			nodes: []*framework.NodeInfo{
				schedtest.NodeInfo(schedtest.MakeNode().Name("a").Label(zone, "a").Obj(), web("w1"), web("w2")),
				schedtest.NodeInfo(schedtest.MakeNode().Name("b").Label(zone, "b").Obj()),
			},
			want: map[string]string{"a": "", "b": ""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := New(nil, schedtest.Handle(t, tc.nodes...))
			for _, ni := range tc.nodes {
				got := schedtest.StatusString(schedtest.RunFilter(t, p, tc.pod, ni, tc.nodes...))
				if want := tc.want[ni.Node().Name]; got != want {
					t.Errorf("%s: got %q, want %q", ni.Node().Name, got, want)
				}
			}
		})
	}
}

// Scoring applies the node inclusion policies too (kube-scheduler's
// PreScore): with nodeTaintsPolicy Honor, the pods on a node the pod cannot
// go to do not crowd that node's zone.
func TestPodTopologySpreadScoreHonoursTaintsPolicy(t *testing.T) {
	all := []*framework.NodeInfo{
		schedtest.NodeInfo(schedtest.MakeNode().Name("tainted").Label(zone, "a").Taint("k", "v", v1.TaintEffectNoSchedule).Obj(), web("w1"), web("w2")),
		schedtest.NodeInfo(schedtest.MakeNode().Name("a2").Label(zone, "a").Obj()),
		schedtest.NodeInfo(schedtest.MakeNode().Name("b").Label(zone, "b").Obj(), web("w3")),
	}
	feasible := all[1:]
	for _, tc := range []struct {
		policy *v1.NodeInclusionPolicy
		best   string
	}{{nil, "b"}, {ptr.To(v1.NodeInclusionPolicyHonor), "a2"}} {
		pod := spreadByZone(v1.ScheduleAnyway, func(_ *v1.Pod, c *v1.TopologySpreadConstraint) { c.NodeTaintsPolicy = tc.policy })
		p, _ := New(nil, schedtest.Handle(t, all...))
		got := schedtest.RunScore(t, p, pod, feasible...)
		if got[tc.best] != framework.MaxNodeScore || got[tc.best] <= min(got["a2"], got["b"]) {
			t.Errorf("nodeTaintsPolicy %v: scores %v, want %s the highest", ptrString(tc.policy), got, tc.best)
		}
	}
}

func ptrString(p *v1.NodeInclusionPolicy) string {
	if p == nil {
		return "unset"
	}
	return string(*p)
}
