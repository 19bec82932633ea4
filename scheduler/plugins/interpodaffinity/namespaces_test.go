package interpodaffinity

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiffkube/skiff/scheduler/cache"
	"github.com/skiffkube/skiff/scheduler/framework/runtime"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// namespaceLabels serves fixed namespace labels to the plugin.
type namespaceLabels map[string]map[string]string

func (n namespaceLabels) NamespaceLabels(name string) map[string]string { return n[name] }

// withNamespaceSelector gives p's only required (anti-)affinity term the
// namespace selector sel (nil keeps none) and the namespaces names.
func withNamespaceSelector(p *v1.Pod, sel *metav1.LabelSelector, names ...string) *v1.Pod {
	var t *v1.PodAffinityTerm
	if a := p.Spec.Affinity.PodAffinity; a != nil {
		t = &a.RequiredDuringSchedulingIgnoredDuringExecution[0]
	} else {
		t = &p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
	}
	t.NamespaceSelector, t.Namespaces = sel, names
	return p
}

// A term's namespaceSelector picks pods by their namespace's labels, and
// its namespaces by name, the union of both (kube-scheduler's
// AffinityTerm.Matches, the incoming pod's selector resolved by
// mergeAffinityTermNamespacesIfNotEmpty); an empty selector picks every
// namespace. A placed pod's anti-affinity is matched against the incoming
// pod's namespace labels.
func TestInterPodAffinityNamespaces(t *testing.T) {
	ns := namespaceLabels{"default": {"tier": "front"}, "team-a": {"team": "a"}, "team-b": {"team": "b"}}
	dbIn := func(namespace string) *v1.Pod {
		return schedtest.MakePod().Namespace(namespace).Name("db").Label("app", "db").Obj()
	}
	teamA := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	affinity := func() *v1.Pod {
		return schedtest.MakePod().Name("web").Label("app", "web").PodAffinity(zone, "app", "db").Obj()
	}
	notAffine := "UnschedulableAndUnresolvable: " + ErrReasonAffinityRulesNotMatch
	existingAnti := "Unschedulable: " + ErrReasonExistingAntiAffinityRulesNotMatch
	tests := []struct {
		name       string
		pod        *v1.Pod
		n1, n2, n3 []*v1.Pod
		want       map[string]string
	}{
		{
			name: "a namespace selector picks the pods of the namespaces it selects",
			pod:  withNamespaceSelector(affinity(), teamA),
			n1:   []*v1.Pod{dbIn("team-b")},
			n3:   []*v1.Pod{dbIn("team-a")},
			want: map[string]string{"n1": notAffine, "n2": notAffine, "n3": ""},
		},
		{
			name: "namespaces listed by name add to the selector's",
			pod:  withNamespaceSelector(affinity(), teamA, "team-b"),
			n1:   []*v1.Pod{dbIn("team-b")},
			want: map[string]string{"n1": "", "n2": "", "n3": notAffine},
		},
		{
			name: "an empty namespace selector picks every namespace",
			pod:  withNamespaceSelector(affinity(), &metav1.LabelSelector{}),
			n3:   []*v1.Pod{dbIn("team-b")},
			want: map[string]string{"n1": notAffine, "n2": notAffine, "n3": ""},
		},
		{
			name: "a placed pod's anti-affinity selects the incoming pod by its namespace's labels",
			pod:  schedtest.MakePod().Name("web").Label("app", "web").Obj(),
			n2: []*v1.Pod{withNamespaceSelector(schedtest.MakePod().Namespace("team-a").Name("loner").PodAntiAffinity(zone, "app", "web").Obj(),
				&metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}})},
			want: map[string]string{"n1": existingAnti, "n2": existingAnti, "n3": ""},
		},
		{
			name: "a placed pod's anti-affinity leaves out the namespaces its selector does not select",
			pod:  schedtest.MakePod().Name("web").Label("app", "web").Obj(),
			n2:   []*v1.Pod{withNamespaceSelector(schedtest.MakePod().Namespace("team-a").Name("loner").PodAntiAffinity(zone, "app", "web").Obj(), teamA)},
			want: map[string]string{"n1": "", "n2": "", "n3": ""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nodes := cluster(tc.n1, tc.n2, tc.n3)
			h, err := runtime.New(runtime.Registry{}, nil, runtime.Options{ClientSet: fake.NewClientset(), Snapshot: cache.NewSnapshot(nodes...), Namespaces: ns, Parallelism: 2})
			if err != nil {
				t.Fatal(err)
			}
			p, err := New(nil, h)
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
