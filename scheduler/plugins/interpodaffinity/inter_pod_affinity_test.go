package interpodaffinity

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

const zone = "topology.kubernetes.io/zone"

// cluster: n1 and n2 in zone a, n3 in zone b; placed pods given per node.
func cluster(n1, n2, n3 []*v1.Pod) []*framework.NodeInfo {
	return []*framework.NodeInfo{
		schedtest.NodeInfo(schedtest.MakeNode().Name("n1").Label(zone, "a").Obj(), n1...),
		schedtest.NodeInfo(schedtest.MakeNode().Name("n2").Label(zone, "a").Obj(), n2...),
		schedtest.NodeInfo(schedtest.MakeNode().Name("n3").Label(zone, "b").Obj(), n3...),
	}
}

func db() *v1.Pod { return schedtest.MakePod().Name("db").Label("app", "db").Obj() }

// mergedAntiAffinity is a pod labelled app=web, hash=<hash> that keeps other
// app=web pods of its hash off its node (matchLabelKeys: [hash]), as the API
// server stores it: the key merged into the selector as hash In (<hash>).
func mergedAntiAffinity(name, hash string) *v1.Pod {
	p := schedtest.MakePod().Name(name).Label("app", "web").Label("hash", hash).PodAntiAffinity(v1.LabelHostname, "app", "web").Obj()
	t := &p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
	t.MatchLabelKeys = []string{"hash"}
	t.LabelSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "hash", Operator: metav1.LabelSelectorOpIn, Values: []string{hash}}}
	return p
}

// relabelled is p with its hash label changed after it was created.
func relabelled(p *v1.Pod, hash string) *v1.Pod {
	p.Labels["hash"] = hash
	return p
}

func TestInterPodAffinityFilter(t *testing.T) {
	tests := []struct {
		name       string
		pod        *v1.Pod
		n1, n2, n3 []*v1.Pod
		want       map[string]string
	}{
		{
			name: "required affinity allows only the zone holding a selected pod",
			pod:  schedtest.MakePod().Name("web").PodAffinity(zone, "app", "db").Obj(),
			n1:   []*v1.Pod{db()},
			want: map[string]string{"n1": "", "n2": "", "n3": "UnschedulableAndUnresolvable: " + ErrReasonAffinityRulesNotMatch},
		},
		{
			name: "required affinity with no selected pod anywhere rejects every node",
			pod:  schedtest.MakePod().Name("web").PodAffinity(zone, "app", "db").Obj(),
			want: map[string]string{"n1": "UnschedulableAndUnresolvable: " + ErrReasonAffinityRulesNotMatch,
				"n2": "UnschedulableAndUnresolvable: " + ErrReasonAffinityRulesNotMatch, "n3": "UnschedulableAndUnresolvable: " + ErrReasonAffinityRulesNotMatch},
		},
		{
			name: "the first pod of a self-affine group may go anywhere",
			pod:  schedtest.MakePod().Name("first").Label("app", "cache").PodAffinity(zone, "app", "cache").Obj(),
			want: map[string]string{"n1": "", "n2": "", "n3": ""},
		},
		{
			name: "required anti-affinity keeps the pod out of the selected pod's zone",
			pod:  schedtest.MakePod().Name("web").PodAntiAffinity(zone, "app", "db").Obj(),
			n2:   []*v1.Pod{db()},
			want: map[string]string{"n1": "Unschedulable: " + ErrReasonAntiAffinityRulesNotMatch,
				"n2": "Unschedulable: " + ErrReasonAntiAffinityRulesNotMatch, "n3": ""},
		},
		{
			name: "a placed pod's anti-affinity keeps a selected newcomer out of its domain",
			pod:  schedtest.MakePod().Name("web").Label("app", "web").Obj(),
			n3:   []*v1.Pod{schedtest.MakePod().Name("loner").PodAntiAffinity(v1.LabelHostname, "app", "web").Obj()},
			want: map[string]string{"n1": "", "n2": "", "n3": "Unschedulable: " + ErrReasonExistingAntiAffinityRulesNotMatch},
		},
		{
			// More excluded domains than node labels: Filter walks the labels.
			name: "placed pods' anti-affinity over several domains",
			pod:  schedtest.MakePod().Name("web").Label("app", "web").Obj(),
			n1:   []*v1.Pod{schedtest.MakePod().Name("loner").PodAntiAffinity(v1.LabelHostname, "app", "web").PodAntiAffinity(zone, "app", "web").Obj()},
			n2:   []*v1.Pod{schedtest.MakePod().Name("hermit").PodAntiAffinity(v1.LabelHostname, "app", "web").Obj()},
			n3:   []*v1.Pod{schedtest.MakePod().Name("recluse").PodAntiAffinity("rack", "app", "web").Obj()},
			want: map[string]string{"n1": "Unschedulable: " + ErrReasonExistingAntiAffinityRulesNotMatch,
				"n2": "Unschedulable: " + ErrReasonExistingAntiAffinityRulesNotMatch, "n3": ""},
		},
		{
			// kube-scheduler checks the pod's own affinity first: its rejection is
			// UnschedulableAndUnresolvable, so preemption does not try the node.
			name: "a node failing both the pod's affinity and a placed pod's anti-affinity reports the affinity",
			pod:  schedtest.MakePod().Name("web").Label("app", "web").PodAffinity(zone, "app", "db").Obj(),
			n1:   []*v1.Pod{db()},
			n3:   []*v1.Pod{schedtest.MakePod().Name("loner").PodAntiAffinity(v1.LabelHostname, "app", "web").Obj()},
			want: map[string]string{"n1": "", "n2": "", "n3": "UnschedulableAndUnresolvable: " + ErrReasonAffinityRulesNotMatch},
		},
		{
			name: "a node failing both the pod's anti-affinity and a placed pod's anti-affinity reports the pod's",
			pod:  schedtest.MakePod().Name("web").Label("app", "web").PodAntiAffinity(v1.LabelHostname, "app", "loner").Obj(),
			n3:   []*v1.Pod{schedtest.MakePod().Name("loner").Label("app", "loner").PodAntiAffinity(v1.LabelHostname, "app", "web").Obj()},
			want: map[string]string{"n1": "", "n2": "", "n3": "Unschedulable: " + ErrReasonAntiAffinityRulesNotMatch},
		},
		{
			// The API server merged matchLabelKeys into the selector when the pod
			// was created (hash In (v1)); its label changed since. As
			// kube-scheduler, the stored selector is what selects.
			name: "a placed pod's matchLabelKeys were merged when it was created",
			pod:  schedtest.MakePod().Name("web").Label("app", "web").Label("hash", "v1").Obj(),
			n3:   []*v1.Pod{relabelled(mergedAntiAffinity("loner", "v1"), "v2")},
			want: map[string]string{"n1": "", "n2": "", "n3": "Unschedulable: " + ErrReasonExistingAntiAffinityRulesNotMatch},
		},
		{
			name: "the pod's own matchLabelKeys were merged when it was created",
			pod:  relabelled(mergedAntiAffinity("web", "v1"), "v2"),
			n1:   []*v1.Pod{schedtest.MakePod().Name("old").Label("app", "web").Label("hash", "v1").Obj()},
			want: map[string]string{"n1": "Unschedulable: " + ErrReasonAntiAffinityRulesNotMatch, "n2": "", "n3": ""},
		},
		{
			name: "pods in other namespaces are not selected by default",
			pod:  schedtest.MakePod().Name("web").PodAntiAffinity(zone, "app", "db").Obj(),
			n1:   []*v1.Pod{schedtest.MakePod().Namespace("other").Name("db").Label("app", "db").Obj()},
			want: map[string]string{"n1": "", "n2": "", "n3": ""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nodes := cluster(tc.n1, tc.n2, tc.n3)
			p, err := New(nil, schedtest.Handle(t, nodes...))
			if err != nil {
				t.Fatal(err)
			}
			for _, ni := range nodes {
				got := schedtest.StatusString(schedtest.RunFilter(t, p, tc.pod, ni, nodes...))
				if want := tc.want[ni.Node().Name]; got != want {
					t.Errorf("%s: got %q, want %q", ni.Node().Name, got, want)
				}
			}
		})
	}
}

func TestInterPodAffinityScore(t *testing.T) {
	nodes := cluster([]*v1.Pod{db()}, nil, nil)
	p, _ := New(nil, schedtest.Handle(t, nodes...))

	near := schedtest.MakePod().Name("web").PreferredPodAffinity(10, zone, "app", "db").Obj()
	got := schedtest.RunScore(t, p, near, nodes...)
	if got["n1"] != 100 || got["n2"] != 100 || got["n3"] != 0 {
		t.Errorf("preferred affinity scores = %v, want zone a:100, b:0", got)
	}
	far := schedtest.MakePod().Name("web").PreferredPodAntiAffinity(10, zone, "app", "db").Obj()
	got = schedtest.RunScore(t, p, far, nodes...)
	if got["n1"] != 0 || got["n2"] != 0 || got["n3"] != 100 {
		t.Errorf("preferred anti-affinity scores = %v, want zone a:0, b:100", got)
	}
}

// InterPodAffinityArgs: hardPodAffinityWeight weighs placed pods' required
// affinity selecting the pod, ignorePreferredTermsOfExistingPods skips a pod
// without preferred terms of its own.
func TestInterPodAffinityScoreArgs(t *testing.T) {
	// n1 (zone a) holds a pod requiring web pods in its zone; n3 (zone b) a pod
	// preferring them there with weight 5, and a db pod.
	nodes := func() []*framework.NodeInfo {
		return cluster(
			[]*v1.Pod{schedtest.MakePod().Name("needs-web").PodAffinity(zone, "app", "web").Obj()},
			nil,
			[]*v1.Pod{schedtest.MakePod().Name("likes-web").PreferredPodAffinity(5, zone, "app", "web").Obj(), db()},
		)
	}
	plain := schedtest.MakePod().Name("web").Label("app", "web").Obj()
	nearDB := schedtest.MakePod().Name("web").Label("app", "web").PreferredPodAffinity(10, zone, "app", "db").Obj()
	tests := []struct {
		name string
		args any
		pod  *v1.Pod
		want map[string]int64 // nil: not scored
	}{
		// Zone a 1, zone b 5.
		{"by default a required term weighs 1", nil, plain, map[string]int64{"n1": 0, "n2": 0, "n3": 100}},
		// Zone a 10, zone b 5.
		{"hardPodAffinityWeight 10", Args{HardPodAffinityWeight: ptr.To[int32](10)}, plain, map[string]int64{"n1": 100, "n2": 100, "n3": 0}},
		// Zone a 0, zone b 5.
		{"hardPodAffinityWeight 0 ignores required terms", Args{HardPodAffinityWeight: ptr.To[int32](0)}, plain, map[string]int64{"n1": 0, "n2": 0, "n3": 100}},
		{"ignorePreferredTermsOfExistingPods skips a pod without preferred terms", Args{IgnorePreferredTermsOfExistingPods: true}, plain, nil},
		// Zone a 1, zone b 5 + 10: placed pods' terms still count.
		{"ignorePreferredTermsOfExistingPods scores a pod with preferred terms as usual", Args{IgnorePreferredTermsOfExistingPods: true}, nearDB,
			map[string]int64{"n1": 0, "n2": 0, "n3": 100}},
		// Zone a 20, zone b 15.
		{"both", Args{HardPodAffinityWeight: ptr.To[int32](20), IgnorePreferredTermsOfExistingPods: true}, nearDB,
			map[string]int64{"n1": 100, "n2": 100, "n3": 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nodes := nodes()
			p, err := New(tc.args, schedtest.Handle(t, nodes...))
			if err != nil {
				t.Fatal(err)
			}
			got := schedtest.RunScore(t, p, tc.pod, nodes...)
			if (got == nil) != (tc.want == nil) {
				t.Fatalf("scores = %v, want %v", got, tc.want)
			}
			for n, want := range tc.want {
				if got[n] != want {
					t.Fatalf("scores = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestArgsValidate(t *testing.T) {
	for w, want := range map[int32]string{
		0: "", 1: "", 100: "",
		-1:  "hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]",
		101: "hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]",
	} {
		a := Args{HardPodAffinityWeight: ptr.To(w)}
		got := ""
		if err := a.Validate(); err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("weight %d: Validate() = %q, want %q", w, got, want)
		}
		if _, err := New(a, schedtest.Handle(t)); (err == nil) != (want == "") {
			t.Errorf("weight %d: New: %v", w, err)
		}
	}
}

// NormalizeScore rounds as kube-scheduler's floating point does: 29 of 100
// becomes 28 (100 × 0.29 is 28.999…), 1 of 3 becomes 33.
func TestNormalizeScoreRoundsAsKubeScheduler(t *testing.T) {
	pl := &InterPodAffinity{}
	scores := []framework.NodeScore{{Name: "a", Score: 0}, {Name: "b", Score: 29}, {Name: "c", Score: 100}}
	if s := pl.NormalizeScore(context.Background(), nil, nil, scores); s != nil {
		t.Fatal(s)
	}
	if scores[0].Score != 0 || scores[1].Score != 28 || scores[2].Score != 100 {
		t.Errorf("normalized %+v, want 0, 28, 100", scores)
	}
	thirds := []framework.NodeScore{{Name: "a", Score: -3}, {Name: "b", Score: -2}, {Name: "c", Score: 0}}
	pl.NormalizeScore(context.Background(), nil, nil, thirds)
	if thirds[0].Score != 0 || thirds[1].Score != 33 || thirds[2].Score != 100 {
		t.Errorf("normalized %+v, want 0, 33, 100", thirds)
	}
}
