package runtime

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/cache"
	"github.com/skiffkube/skiff/scheduler/framework"
)

// filterAndScore is a plugin at Filter, PreScore and Score.
type filterAndScore struct{}

func (filterAndScore) Name() string { return "FilterAndScore" }
func (filterAndScore) Filter(context.Context, *framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status {
	return nil
}
func (filterAndScore) PreScore(context.Context, *framework.CycleState, *v1.Pod, []*framework.NodeInfo) *framework.Status {
	return nil
}
func (filterAndScore) Score(context.Context, *framework.CycleState, *v1.Pod, *framework.NodeInfo) (int64, *framework.Status) {
	return 0, nil
}

// NoScore keeps a plugin at its other points and out of PreScore and Score.
func TestNoScoreRunsThePluginOnlyAtItsOtherPoints(t *testing.T) {
	reg := Registry{"FilterAndScore": func(any, framework.Handle) (framework.Plugin, error) { return filterAndScore{}, nil }}
	for _, noScore := range []bool{false, true} {
		f, err := New(reg, []PluginConfig{{Name: "FilterAndScore", Weight: 2, NoScore: noScore}}, Options{Snapshot: cache.NewEmptySnapshot()})
		if err != nil {
			t.Fatal(err)
		}
		if len(f.filter) != 1 {
			t.Errorf("NoScore %v: %d filter plugins, want 1", noScore, len(f.filter))
		}
		if scores := len(f.score) + len(f.preScore); (scores == 0) != noScore {
			t.Errorf("NoScore %v: %d score and %d preScore plugins", noScore, len(f.score), len(f.preScore))
		}
		if f.HasScorePlugins() == noScore {
			t.Errorf("NoScore %v: HasScorePlugins() = %v", noScore, f.HasScorePlugins())
		}
	}
}

// preFilterer answers PreFilter with a fixed result and status, and records
// that it ran.
type preFilterer struct {
	name   string
	result *framework.PreFilterResult
	status *framework.Status
	ran    *[]string
}

func (p preFilterer) Name() string { return p.name }
func (p preFilterer) PreFilter(context.Context, *framework.CycleState, *v1.Pod, []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	*p.ran = append(*p.ran, p.name)
	return p.result, p.status
}

func preFilterFramework(t *testing.T, plugins ...preFilterer) *Framework {
	t.Helper()
	reg := Registry{}
	var cfg []PluginConfig
	for _, p := range plugins {
		reg[p.name] = func(any, framework.Handle) (framework.Plugin, error) { return p, nil }
		cfg = append(cfg, PluginConfig{Name: p.name})
	}
	f, err := New(reg, cfg, Options{Snapshot: cache.NewEmptySnapshot()})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func names(ns ...string) *framework.PreFilterResult {
	r := &framework.PreFilterResult{NodeNames: map[string]bool{}}
	for _, n := range ns {
		r.NodeNames[n] = true
	}
	return r
}

// Node sets that intersect to nothing reject the pod on every node, naming
// the plugins, in kube-scheduler's words.
func TestPreFilterResultsLeavingNoNodeRejectThePod(t *testing.T) {
	var ran []string
	f := preFilterFramework(t,
		preFilterer{name: "B", result: names("n1", "n2"), ran: &ran},
		preFilterer{name: "Plain", ran: &ran},
		preFilterer{name: "A", result: names("n2", "n3"), ran: &ran},
		preFilterer{name: "C", result: names("n1"), ran: &ran},
		preFilterer{name: "Later", ran: &ran},
	)
	r, s, by := f.RunPreFilterPlugins(context.Background(), framework.NewCycleState(), &v1.Pod{}, nil)
	if s.Code() != framework.UnschedulableAndUnresolvable || s.Message() != "node(s) didn't satisfy plugin(s) [A B C] simultaneously" {
		t.Fatalf("status %v", s)
	}
	if r == nil || len(r.NodeNames) != 0 || !slices.Equal(by, []string{"A", "B", "C"}) {
		t.Fatalf("result %v, narrowed by %v", r, by)
	}
	if !slices.Equal(ran, []string{"B", "Plain", "A", "C"}) {
		t.Fatalf("ran %v: the plugins after the empty intersection should not run", ran)
	}

	ran = nil
	f = preFilterFramework(t, preFilterer{name: "NodeAffinity", result: names(), ran: &ran})
	if _, s, _ := f.RunPreFilterPlugins(context.Background(), framework.NewCycleState(), &v1.Pod{}, nil); s.Message() != "node(s) didn't satisfy plugin NodeAffinity" {
		t.Fatalf("one plugin: status %v", s)
	}

	ran = nil
	f = preFilterFramework(t, preFilterer{name: "A", result: names("n1", "n2"), ran: &ran}, preFilterer{name: "B", result: names("n2", "n3"), ran: &ran})
	r, s, by = f.RunPreFilterPlugins(context.Background(), framework.NewCycleState(), &v1.Pod{}, nil)
	if !s.IsSuccess() || len(r.NodeNames) != 1 || !r.NodeNames["n2"] || !slices.Equal(by, []string{"A", "B"}) {
		t.Fatalf("intersection: status %v, result %v, narrowed by %v", s, r, by)
	}
}

// An Unschedulable PreFilter lets the later ones run (preemption needs their
// state) and is returned at the end; an UnschedulableAndUnresolvable one
// stops at once.
func TestUnschedulablePreFilterLetsTheOthersRun(t *testing.T) {
	var ran []string
	state := framework.NewCycleState()
	f := preFilterFramework(t,
		preFilterer{name: "Rejects", status: framework.NewStatus(framework.Unschedulable, "no"), ran: &ran},
		preFilterer{name: "Skips", status: framework.NewStatus(framework.Skip), ran: &ran},
		preFilterer{name: "Later", ran: &ran},
	)
	_, s, _ := f.RunPreFilterPlugins(context.Background(), state, &v1.Pod{}, nil)
	if s.Code() != framework.Unschedulable || s.Plugin() != "Rejects" || s.Message() != "no" {
		t.Fatalf("status %v", s)
	}
	if !slices.Equal(ran, []string{"Rejects", "Skips", "Later"}) || !state.SkipFilterPlugins["Skips"] {
		t.Fatalf("ran %v, skipped %v", ran, state.SkipFilterPlugins)
	}

	ran = nil
	f = preFilterFramework(t,
		preFilterer{name: "Refuses", status: framework.NewStatus(framework.UnschedulableAndUnresolvable, "never"), ran: &ran},
		preFilterer{name: "Later", ran: &ran},
	)
	if _, s, _ := f.RunPreFilterPlugins(context.Background(), framework.NewCycleState(), &v1.Pod{}, nil); s.Code() != framework.UnschedulableAndUnresolvable || s.Plugin() != "Refuses" {
		t.Fatalf("status %v", s)
	}
	if !slices.Equal(ran, []string{"Refuses"}) {
		t.Fatalf("ran %v", ran)
	}
}

// postFilterer answers PostFilter with a fixed result and status, and
// records that it ran.
type postFilterer struct {
	name   string
	result *framework.PostFilterResult
	status *framework.Status
	ran    *[]string
}

func (p postFilterer) Name() string { return p.name }
func (p postFilterer) PostFilter(context.Context, *framework.CycleState, *v1.Pod, framework.NodeToStatus) (*framework.PostFilterResult, *framework.Status) {
	*p.ran = append(*p.ran, p.name)
	return p.result, p.status
}

// As kube-scheduler's RunPostFilterPlugins: success or an
// UnschedulableAndUnresolvable verdict ends the run; Unschedulable ones let
// the next plugin try, and the status gathers all their reasons under the
// first plugin that rejected.
func TestPostFilterPluginsStopAtAVerdictNoOtherCanChange(t *testing.T) {
	clear := &framework.PostFilterResult{}
	nominate := &framework.PostFilterResult{NominatedNodeName: "n1"}
	tests := []struct {
		name        string
		plugins     []postFilterer
		wantRan     []string
		wantCode    framework.Code
		wantMessage string
		wantPlugin  string
		wantResult  *framework.PostFilterResult
	}{
		{
			name: "unresolvable stops the run",
			plugins: []postFilterer{
				{name: "A", result: clear, status: framework.NewStatus(framework.UnschedulableAndUnresolvable, "a gives up")},
				{name: "B", result: nominate},
			},
			wantRan: []string{"A"}, wantCode: framework.UnschedulableAndUnresolvable, wantMessage: "a gives up", wantPlugin: "A", wantResult: clear,
		},
		{
			name: "unschedulable lets the next plugin succeed",
			plugins: []postFilterer{
				{name: "A", result: clear, status: framework.NewStatus(framework.Unschedulable, "a cannot")},
				{name: "B", result: nominate},
			},
			wantRan: []string{"A", "B"}, wantCode: framework.Success, wantResult: nominate,
		},
		{
			name: "every plugin's reasons under the first that rejected",
			plugins: []postFilterer{
				{name: "A", status: framework.NewStatus(framework.Unschedulable, "a cannot")},
				{name: "B", result: clear, status: framework.NewStatus(framework.Unschedulable, "b cannot")},
				{name: "C", status: framework.NewStatus(framework.Unschedulable, "c cannot")},
			},
			wantRan: []string{"A", "B", "C"}, wantCode: framework.Unschedulable, wantMessage: "a cannot, b cannot, c cannot", wantPlugin: "A", wantResult: clear,
		},
		{
			name: "an error stops the run with the plugin's own message",
			plugins: []postFilterer{
				{name: "A", result: nominate, status: framework.AsStatus(errors.New("preemption: the API is down"))},
				{name: "B", result: nominate},
			},
			wantRan: []string{"A"}, wantCode: framework.Error, wantMessage: "preemption: the API is down", wantPlugin: "A",
		},
		{
			name: "a code that is no verdict is an error",
			plugins: []postFilterer{
				{name: "A", status: framework.NewStatus(framework.Skip)},
				{name: "B", result: nominate},
			},
			wantRan: []string{"A"}, wantCode: framework.Error, wantMessage: `PostFilter plugin "A" returned unexpected code Skip`, wantPlugin: "A",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ran []string
			reg := Registry{}
			var cfg []PluginConfig
			for _, p := range tc.plugins {
				p.ran = &ran
				reg[p.name] = func(any, framework.Handle) (framework.Plugin, error) { return p, nil }
				cfg = append(cfg, PluginConfig{Name: p.name})
			}
			f, err := New(reg, cfg, Options{Snapshot: cache.NewEmptySnapshot()})
			if err != nil {
				t.Fatal(err)
			}
			r, s := f.RunPostFilterPlugins(context.Background(), framework.NewCycleState(), &v1.Pod{}, framework.NodeToStatus{})
			if !slices.Equal(ran, tc.wantRan) {
				t.Errorf("ran %v, want %v", ran, tc.wantRan)
			}
			if s.Code() != tc.wantCode || s.Message() != tc.wantMessage || s.Plugin() != tc.wantPlugin {
				t.Errorf("status %q (code %v, message %q, plugin %q), want code %v, message %q, plugin %q",
					s, s.Code(), s.Message(), s.Plugin(), tc.wantCode, tc.wantMessage, tc.wantPlugin)
			}
			if r != tc.wantResult {
				t.Errorf("result %+v, want %+v", r, tc.wantResult)
			}
		})
	}
}

// sorter is a queue sort plugin ordering by name.
type sorter struct{ name string }

func (s sorter) Name() string { return s.name }
func (sorter) Less(a *v1.Pod, _ time.Time, b *v1.Pod, _ time.Time) bool {
	return a.Name < b.Name
}

// A profile has at most one queue sort plugin, as kube-scheduler's, and
// QueueSortFunc is its Less (nil when there is none).
func TestQueueSort(t *testing.T) {
	reg := Registry{
		"SortA": func(any, framework.Handle) (framework.Plugin, error) { return sorter{"SortA"}, nil },
		"SortB": func(any, framework.Handle) (framework.Plugin, error) { return sorter{"SortB"}, nil },
	}
	opts := Options{Snapshot: cache.NewEmptySnapshot()}
	if _, err := New(reg, []PluginConfig{{Name: "SortA"}, {Name: "SortB"}}, opts); err == nil || !strings.Contains(err.Error(), "only one queue sort plugin can be enabled") {
		t.Errorf("two queue sort plugins: %v", err)
	}
	f, err := New(reg, []PluginConfig{{Name: "SortA"}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	less := f.QueueSortFunc()
	a, b := &v1.Pod{}, &v1.Pod{}
	a.Name, b.Name = "a", "b"
	if less == nil || !less(a, time.Time{}, b, time.Time{}) || less(b, time.Time{}, a, time.Time{}) {
		t.Errorf("QueueSortFunc does not order by the plugin's Less")
	}
	f, err = New(reg, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	if f.QueueSortFunc() != nil {
		t.Errorf("no queue sort plugin: QueueSortFunc is not nil")
	}
}

// erringFilter is a Filter plugin that fails with an error on every node.
type erringFilter struct{}

func (erringFilter) Name() string { return "Erring" }
func (erringFilter) Filter(context.Context, *framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status {
	return framework.AsStatus(errors.New("lost its marbles"))
}

// A Filter plugin's error names the plugin as kube-scheduler's framework
// words it, "running "X" filter plugin: …", however the filters are run:
// the message ends up in the pod's condition (a scheduling error, or a
// failed preemption's simulation).
func TestFilterErrorsNameThePluginAsKubeScheduler(t *testing.T) {
	reg := Registry{"Erring": func(any, framework.Handle) (framework.Plugin, error) { return erringFilter{}, nil }}
	node := &v1.Node{}
	node.Name = "n"
	ni := framework.NewNodeInfo()
	ni.SetNode(node)
	f, err := New(reg, []PluginConfig{{Name: "Erring"}}, Options{Snapshot: cache.NewSnapshot(ni)})
	if err != nil {
		t.Fatal(err)
	}
	const want = `running "Erring" filter plugin: lost its marbles`
	state := framework.NewCycleState()
	if s := f.RunFilterPluginsWithNominatedPods(context.Background(), state, &v1.Pod{}, ni); s.Code() != framework.Error || s.Message() != want || s.Plugin() != "Erring" {
		t.Errorf("RunFilterPluginsWithNominatedPods: %v (plugin %q), want an error %q", s, s.Plugin(), want)
	}
	_, _, _, err = f.FindFeasibleNodes(context.Background(), state, &v1.Pod{}, []*framework.NodeInfo{ni}, 0, 0)
	if err == nil || err.Error() != want {
		t.Errorf("FindFeasibleNodes: %v, want %q", err, want)
	}
	// The message leaves the node out, as upstream's; the error still
	// names it, for the scheduler's log.
	var ne *framework.NodeError
	if !errors.As(err, &ne) || ne.Node != "n" {
		t.Errorf("FindFeasibleNodes: %#v, want a NodeError naming node n", err)
	}
}
