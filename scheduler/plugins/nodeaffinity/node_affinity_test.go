package nodeaffinity

import (
	"context"
	"fmt"
	"maps"
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

func labelTerm(key string, values ...string) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}}}
}

// addedRequired is a profile's NodeAffinityArgs requiring the terms.
func addedRequired(terms ...v1.NodeSelectorTerm) Args {
	return Args{AddedAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms}}}
}

func newWith(t *testing.T, a Args) *NodeAffinity {
	t.Helper()
	p, err := New(a, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p.(*NodeAffinity)
}

// The profile's added affinity filters every pod, before (and whatever)
// the pod's own selector and affinity, as kube-scheduler's.
func TestNodeAffinityFilterWithAddedAffinity(t *testing.T) {
	zoneA := schedtest.NodeInfo(schedtest.MakeNode().Name("n1").Label("zone", "a").Label("disk", "ssd").Obj())
	zoneB := schedtest.NodeInfo(schedtest.MakeNode().Name("n2").Label("zone", "b").Label("disk", "ssd").Obj())
	enforced := "UnschedulableAndUnresolvable: " + ErrReasonEnforced
	tests := []struct {
		name string
		args Args
		pod  *v1.Pod
		node *framework.NodeInfo
		want string
	}{
		{"a pod without affinity fits a node the added affinity takes", addedRequired(labelTerm("zone", "a")), schedtest.MakePod().Obj(), zoneA, ""},
		{"a pod without affinity does not fit a node the added affinity refuses", addedRequired(labelTerm("zone", "a")), schedtest.MakePod().Obj(), zoneB, enforced},
		{"the added affinity is checked before the pod's selector", addedRequired(labelTerm("zone", "a")),
			schedtest.MakePod().NodeSelector("disk", "hdd").Obj(), zoneB, enforced},
		{"a node the added affinity takes still needs the pod's selector", addedRequired(labelTerm("zone", "a")),
			schedtest.MakePod().NodeSelector("disk", "hdd").Obj(), zoneA, "UnschedulableAndUnresolvable: " + ErrReasonPod},
		{"a pod's own affinity does not widen the added one", addedRequired(labelTerm("zone", "a")),
			schedtest.MakePod().RequiredNodeAffinityIn("zone", "a", "b").Obj(), zoneB, enforced},
		{"the added terms are ORed", addedRequired(labelTerm("zone", "a"), labelTerm("zone", "b")), schedtest.MakePod().Obj(), zoneB, ""},
		{"added terms naming nodes by metadata.name filter too", addedRequired(nameTerm([]string{"n1"})), schedtest.MakePod().Obj(), zoneB, enforced},
		{"an added selector without terms takes no node", addedRequired(), schedtest.MakePod().Obj(), zoneA, enforced},
		{"added preferred terms alone filter nothing",
			Args{AddedAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 1, Preference: labelTerm("zone", "a")}}}},
			schedtest.MakePod().Obj(), zoneB, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newWith(t, tc.args)
			if got := schedtest.StatusString(schedtest.RunFilter(t, p, tc.pod, tc.node, zoneA, zoneB)); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// As kube-scheduler's PreFilter, only the pod's own terms narrow the nodes
// to filter: a pod without any is not skipped once the profile adds an
// affinity, and added terms naming nodes do not narrow.
func TestNodeAffinityPreFilterWithAddedAffinity(t *testing.T) {
	tests := []struct {
		name   string
		args   Args
		pod    *v1.Pod
		want   []string // nil: all nodes
		status string
	}{
		{"a pod without affinity is filtered, on every node", addedRequired(labelTerm("zone", "a")), schedtest.MakePod().Obj(), nil, ""},
		{"added terms naming nodes narrow nothing", addedRequired(nameTerm([]string{"n1"})), schedtest.MakePod().Obj(), nil, ""},
		{"the pod's terms naming nodes still narrow", addedRequired(labelTerm("zone", "a")), withRequired(nameTerm([]string{"n2"})), []string{"n2"}, ""},
		{"added preferred terms alone leave Filter nothing to do",
			Args{AddedAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 1, Preference: labelTerm("zone", "a")}}}},
			schedtest.MakePod().Obj(), nil, "Skip"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, s := newWith(t, tc.args).PreFilter(context.Background(), framework.NewCycleState(), tc.pod, nil)
			got := schedtest.StatusString(s)
			if s.IsSkip() {
				got = "Skip"
			}
			if got != tc.status {
				t.Fatalf("status %q, want %q", got, tc.status)
			}
			var names []string
			if r != nil {
				for n := range r.NodeNames {
					names = append(names, n)
				}
				sort.Strings(names)
			}
			if !slices.Equal(names, tc.want) || (r == nil) != (tc.want == nil) {
				t.Fatalf("nodes %v (result %v), want %v", names, r, tc.want)
			}
		})
	}
}

// The added preferred terms are scored with the pod's own, their matching
// weights summed, and score a pod that has none of its own.
func TestNodeAffinityScoreWithAddedPreferredTerms(t *testing.T) {
	both := schedtest.NodeInfo(schedtest.MakeNode().Name("both").Label("disk", "ssd").Label("zone", "a").Obj())
	ssd := schedtest.NodeInfo(schedtest.MakeNode().Name("ssd").Label("disk", "ssd").Obj())
	zone := schedtest.NodeInfo(schedtest.MakeNode().Name("zone").Label("zone", "a").Obj())
	none := schedtest.NodeInfo(schedtest.MakeNode().Name("none").Obj())
	added := Args{AddedAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{
		{Weight: 3, Preference: labelTerm("disk", "ssd")},
	}}}
	tests := []struct {
		name string
		args Args
		pod  *v1.Pod
		want map[string]int64 // nil: Score skipped
	}{
		{"added and own weights are summed", added, schedtest.MakePod().PreferredNodeAffinityIn(1, "zone", "a").Obj(),
			map[string]int64{"both": 100, "ssd": 75, "zone": 25, "none": 0}},
		{"a pod without preferences is scored by the added terms", added, schedtest.MakePod().Obj(),
			map[string]int64{"both": 100, "ssd": 100, "zone": 0, "none": 0}},
		{"an added required affinity alone scores nothing", addedRequired(labelTerm("zone", "a")), schedtest.MakePod().Obj(), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := schedtest.RunScore(t, newWith(t, tc.args), tc.pod, both, ssd, zone, none)
			if !maps.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Fatalf("scores %v, want %v", got, tc.want)
			}
		})
	}
}

// Added terms are checked as kube-scheduler's ValidateNodeAffinityArgs
// checks them, New refusing what would not parse.
func TestArgsValidate(t *testing.T) {
	badKey := addedRequired(labelTerm("invalid/label/key", "v"))
	tests := []struct {
		name string
		args Args
		want string
	}{
		{"no added affinity", Args{}, ""},
		{"valid terms", addedRequired(labelTerm("zone", "a")), ""},
		{"a bad label key", badKey,
			`addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key: Invalid value: "invalid/label/key": ` +
				`a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character ` +
				`(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') ` +
				`with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`},
		{"a preferred matchFields with two names",
			Args{AddedAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 1, Preference: nameTerm([]string{"n1", "n2"})}}}},
			`addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchFields[0].values: Invalid value: ["n1","n2"]: must have one element`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.args.Validate(nil)
			if got := fmt.Sprint(err); (err == nil && tc.want != "") || (err != nil && got != tc.want) {
				t.Fatalf("Validate = %v\nwant        %s", err, tc.want)
			}
			if _, err := New(tc.args, nil); (err == nil) != (tc.want == "") {
				t.Fatalf("New: %v", err)
			}
		})
	}
}
