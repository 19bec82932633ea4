package podtopologyspread

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

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

func TestPodTopologySpreadScoreValues(t *testing.T) {
	// zones() plus n5, alone in zone c and not among the feasible nodes.
	all := append(zones(), schedtest.NodeInfo(schedtest.MakeNode().Name("n5").Label(zone, "c").Obj()))
	feasible := all[:4]
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]int64
	}{
		{
			// kube-scheduler's raw score is count × log(domains+2) + (maxSkew-1),
			// the domains being those of the feasible nodes (a and b, not c):
			// zone a 3×ln4+2 ≈ 6, zone b 2, then reversed over [2, 6].
			name: "maxSkew waters down the difference; unfeasible domains do not weigh",
			pod:  schedtest.MakePod().Name("new").Label("app", "web").SpreadConstraint(3, zone, v1.ScheduleAnyway, "app", "web").Obj(),
			want: map[string]int64{"n1": 33, "n2": 33, "n3": 100, "n4": 0},
		},
		{
			// Per node, over the 4 feasible nodes: n1 2×ln6 ≈ 4, n2 ≈ 2, n3 and n4 0.
			name: "hostname spreading counts each node",
			pod:  schedtest.MakePod().Name("new").Label("app", "web").SpreadConstraint(1, v1.LabelHostname, v1.ScheduleAnyway, "app", "web").Obj(),
			want: map[string]int64{"n1": 0, "n2": 50, "n3": 100, "n4": 100},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := New(nil, schedtest.Handle(t, all...))
			got := schedtest.RunScore(t, p, tc.pod, feasible...)
			for n, want := range tc.want {
				if got[n] != want {
					t.Errorf("scores = %v, want %v", got, tc.want)
					break
				}
			}
		})
	}
}

func TestPodTopologySpreadSystemDefaults(t *testing.T) {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default"},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       v1.ServiceSpec{Selector: map[string]string{"app": "web"}},
	}
	rc := &v1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web-rc", Namespace: "default"},
		Spec:       v1.ReplicationControllerSpec{Selector: map[string]string{"app": "web"}},
	}
	owned := func() *v1.Pod {
		p := web("new")
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", Controller: ptr.To(true)}}
		return p
	}
	rcOwned := func() *v1.Pod {
		p := web("new")
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ReplicationController", Name: "web-rc", Controller: ptr.To(true)}}
		return p
	}
	// Default constraints: hostname maxSkew 3, zone maxSkew 5; n4 lacks a zone
	// but is still scored by hostname. Raw: n1 2×ln6+2 + 3×ln5+4 ≈ 14,
	// n2 ≈ 13, n3 6, n4 2; reversed over [2, 14].
	spread := map[string]int64{"n1": 14, "n2": 21, "n3": 71, "n4": 100}
	tests := []struct {
		name    string
		pod     *v1.Pod
		objects []runtime.Object
		want    map[string]int64 // nil: not scored
	}{
		{"a ReplicaSet's pod is spread by default", owned(), []runtime.Object{rs}, spread},
		{"a Service's pod is spread by default", web("new"), []runtime.Object{svc}, spread},
		{"a ReplicationController's pod is spread by default", rcOwned(), []runtime.Object{rc}, spread},
		{"a pod of no Service or controller is not spread", web("new"), nil, nil},
		{"a pod whose controller is gone is not spread", owned(), nil, nil},
		{"a pod with its own constraints gets no defaults", schedtest.MakePod().Name("new").Label("app", "web").
			SpreadConstraint(1, zone, v1.DoNotSchedule, "app", "web").Obj(), []runtime.Object{rs, svc}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nodes := zones()
			p, err := New(nil, handleWith(t, nodes, tc.objects...))
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

// With the system defaults, which score nodes lacking a zone, kube-scheduler
// reads a missing zone label as the value "": a node labelled zone="" and
// one without the label are one domain, which counts the pods of both
// (only the labelled node is scored on it). Raw, with hostname weight ln5
// and zone weight ln4 (domains a and ""): n1 1×ln5+2 + 1×ln4+4 ≈ 9, n2
// 0+2 + 2×ln4+4 ≈ 9, n3 2×ln5+2 ≈ 5; reversed over [5, 9].
func TestPodTopologySpreadSystemDefaultsReadAMissingZoneAsEmpty(t *testing.T) {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default"},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
	pod := web("new")
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", Controller: ptr.To(true)}}
	nodes := []*framework.NodeInfo{
		schedtest.NodeInfo(schedtest.MakeNode().Name("n1").Label(zone, "a").Obj(), web("w1")),
		schedtest.NodeInfo(schedtest.MakeNode().Name("n2").Label(zone, "").Obj()),
		schedtest.NodeInfo(schedtest.MakeNode().Name("n3").Obj(), web("w2"), web("w3")),
	}
	p, err := New(nil, handleWith(t, nodes, rs))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"n1": 55, "n2": 55, "n3": 100}
	if got := schedtest.RunScore(t, p, pod, nodes...); !maps.Equal(got, want) {
		t.Fatalf("scores = %v, want %v", got, want)
	}
}

// handleWith is a handle over nodes whose informers hold objects
// (ReplicaSets, ReplicationControllers and Services).
func handleWith(t *testing.T, nodes []*framework.NodeInfo, objects ...runtime.Object) framework.Handle {
	t.Helper()
	h := schedtest.Handle(t, nodes...)
	f := h.SharedInformerFactory()
	for _, o := range objects {
		var err error
		switch o := o.(type) {
		case *appsv1.ReplicaSet:
			err = f.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(o)
		case *v1.Service:
			err = f.Core().V1().Services().Informer().GetIndexer().Add(o)
		case *v1.ReplicationController:
			err = f.Core().V1().ReplicationControllers().Informer().GetIndexer().Add(o)
		default:
			t.Fatalf("unexpected object %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// PodTopologySpreadArgs' defaultingType List replaces the system defaults
// with the configured constraints, which filter when DoNotSchedule and,
// unlike the system defaults, leave unscored the nodes lacking a key.
func TestPodTopologySpreadListDefaults(t *testing.T) {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default"},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
	owned := func() *v1.Pod {
		p := web("new")
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", Controller: ptr.To(true)}}
		return p
	}
	list := func(cs ...v1.TopologySpreadConstraint) Args {
		return Args{DefaultingType: ListDefaulting, DefaultConstraints: cs}
	}
	hardZone := v1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: zone, WhenUnsatisfiable: v1.DoNotSchedule}
	softZone := v1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: zone, WhenUnsatisfiable: v1.ScheduleAnyway}
	notMatch := "Unschedulable: " + ErrReasonConstraintsNotMatch
	missing := "UnschedulableAndUnresolvable: " + ErrReasonNodeLabelNotMatch
	tests := []struct {
		name       string
		args       Args
		pod        *v1.Pod
		wantFilter map[string]string
		wantScore  map[string]int64 // nil: not scored
	}{
		{
			name:       "a DoNotSchedule default filters a ReplicaSet's pod",
			args:       list(hardZone),
			pod:        owned(),
			wantFilter: map[string]string{"n1": notMatch, "n2": notMatch, "n3": "", "n4": missing},
		},
		{
			name: "defaults do not apply to a pod of no controller",
			args: list(hardZone, softZone),
			pod:  web("new"),
		},
		{
			name:       "defaults do not apply to a pod with constraints of its own",
			args:       list(hardZone),
			pod:        schedtest.MakePod().Name("new").Label("app", "web").SpreadConstraint(4, zone, v1.DoNotSchedule, "app", "web").Obj(),
			wantFilter: map[string]string{"n4": missing},
		},
		{
			// Zones a (3 pods) and b (none), weight ln 4: a ≈ 4, b 0; n4 has no zone.
			name:      "a ScheduleAnyway default scores only nodes with its key",
			args:      list(softZone),
			pod:       owned(),
			wantScore: map[string]int64{"n1": 0, "n2": 0, "n3": 100, "n4": 0},
		},
		{
			name: "an empty list turns default spreading off",
			args: list(),
			pod:  owned(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nodes := zones()
			p, err := New(tc.args, handleWith(t, nodes, rs))
			if err != nil {
				t.Fatal(err)
			}
			for _, ni := range nodes {
				got := schedtest.StatusString(schedtest.RunFilter(t, p, tc.pod, ni, nodes...))
				if want := tc.wantFilter[ni.Node().Name]; got != want {
					t.Errorf("Filter on %s: got %q, want %q", ni.Node().Name, got, want)
				}
			}
			got := schedtest.RunScore(t, p, tc.pod, nodes...)
			if (got == nil) != (tc.wantScore == nil) {
				t.Fatalf("scores = %v, want %v", got, tc.wantScore)
			}
			for n, want := range tc.wantScore {
				if got[n] != want {
					t.Fatalf("scores = %v, want %v", got, tc.wantScore)
				}
			}
		})
	}
}

func TestArgsValidate(t *testing.T) {
	zoneSoft := v1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: zone, WhenUnsatisfiable: v1.ScheduleAnyway}
	tests := []struct {
		name string
		args Args
		want string // "" for valid
	}{
		{"no args are the system defaults", Args{}, ""},
		{"an empty list", Args{DefaultingType: ListDefaulting}, ""},
		{"a list", Args{DefaultingType: ListDefaulting, DefaultConstraints: []v1.TopologySpreadConstraint{zoneSoft}}, ""},
		{"constraints need the List type", Args{DefaultConstraints: []v1.TopologySpreadConstraint{zoneSoft}},
			`defaultingType: Invalid value: "System": when .defaultConstraints are not empty`},
		{"an unknown type", Args{DefaultingType: "Zones"},
			`defaultingType: Unsupported value: "Zones": supported values: "System", "List"`},
		{"a selector", Args{DefaultingType: ListDefaulting, DefaultConstraints: []v1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: zone, WhenUnsatisfiable: v1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{}}}},
			"defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"},
		{"no maxSkew", Args{DefaultingType: ListDefaulting, DefaultConstraints: []v1.TopologySpreadConstraint{
			{TopologyKey: zone, WhenUnsatisfiable: v1.ScheduleAnyway}}},
			"defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)"},
		{"no whenUnsatisfiable", Args{DefaultingType: ListDefaulting, DefaultConstraints: []v1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: zone}}},
			"defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty"},
		{"no topologyKey", Args{DefaultingType: ListDefaulting, DefaultConstraints: []v1.TopologySpreadConstraint{
			{MaxSkew: 1, WhenUnsatisfiable: v1.DoNotSchedule}}},
			"defaultConstraints[0].topologyKey: Required value: can not be empty"},
		{"a repeated key and action", Args{DefaultingType: ListDefaulting, DefaultConstraints: []v1.TopologySpreadConstraint{zoneSoft, zoneSoft}},
			`defaultConstraints[1]: Duplicate value: "{topology.kubernetes.io/zone, ScheduleAnyway}"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.args.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Validate() = %q, want %q", got, tc.want)
			}
			if _, err := New(tc.args, nil); (err == nil) != (tc.want == "") {
				t.Errorf("New: %v", err)
			}
		})
	}
}

// AddPod and RemovePod (preemption's simulation) leave the state as a
// fresh PreFilter over the changed nodes would be: the minimum Filter
// compares with follows pods moving in and out of every domain.
func TestPodTopologySpreadAddRemovePod(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var nodes []*framework.NodeInfo
	for i := range 6 {
		node := schedtest.MakeNode().Name(fmt.Sprintf("n%d", i)).Label(zone, fmt.Sprintf("z%d", i%3)).Obj()
		var pods []*v1.Pod
		for j := range 1 + i%3 {
			pods = append(pods, web(fmt.Sprintf("w%d-%d", i, j)))
		}
		nodes = append(nodes, schedtest.NodeInfo(node, pods...))
	}
	pod := schedtest.MakePod().Name("new").Label("app", "web").
		SpreadConstraint(1, v1.LabelHostname, v1.DoNotSchedule, "app", "web").
		SpreadConstraint(2, zone, v1.DoNotSchedule, "app", "web").Obj()
	p, err := New(nil, schedtest.Handle(t, nodes...))
	if err != nil {
		t.Fatal(err)
	}
	pl := p.(*PodTopologySpread)
	ctx := context.Background()
	state := framework.NewCycleState()
	if _, s := pl.PreFilter(ctx, state, pod, nodes); !s.IsSuccess() {
		t.Fatal(s)
	}
	for step := range 200 {
		ni := nodes[rng.IntN(len(nodes))]
		if len(ni.Pods) > 0 && rng.IntN(2) == 0 {
			gone := ni.Pods[rng.IntN(len(ni.Pods))]
			ni.RemovePod(gone.Pod)
			if s := pl.RemovePod(ctx, state, pod, gone, ni); !s.IsSuccess() {
				t.Fatal(s)
			}
		} else {
			added := framework.NewPodInfo(web(fmt.Sprintf("a%d", step)))
			added.Pod.UID = types.UID(added.Pod.Name)
			ni.AddPodInfo(added)
			if s := pl.AddPod(ctx, state, pod, added, ni); !s.IsSuccess() {
				t.Fatal(s)
			}
		}
		fresh := framework.NewCycleState()
		q, _ := New(nil, schedtest.Handle(t, nodes...))
		if _, s := q.(*PodTopologySpread).PreFilter(ctx, fresh, pod, nodes); !s.IsSuccess() {
			t.Fatal(s)
		}
		for _, n := range nodes {
			got := schedtest.StatusString(pl.Filter(ctx, state, pod, n))
			want := schedtest.StatusString(q.(*PodTopologySpread).Filter(ctx, fresh, pod, n))
			if got != want {
				t.Fatalf("step %d, node %s: Filter after AddPod/RemovePod %q, after a fresh PreFilter %q", step, n.Node().Name, got, want)
			}
		}
	}
}
