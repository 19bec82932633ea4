package runtime

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/cache"
	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/metrics"
)

// hinted registers node adds with a hint answering answer (or failing),
// assigned-pod deletes without a hint.
type hinted struct {
	answer framework.QueueingHint
	err    error
}

func (hinted) Name() string { return "Hinted" }
func (h hinted) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeLabel},
			QueueingHintFn: func(*v1.Pod, any, any) (framework.QueueingHint, error) { return h.answer, h.err }},
		{Event: framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Delete}},
	}
}

// silent registers no events at all.
type silent struct{}

func (silent) Name() string { return "Silent" }

// TestQueueingHintAsksTheRejectingPluginAsKubeSchedulerDoes: a registered
// event goes to the plugin's hint (none: Queue; an error: Queue), another
// is QueueSkip; a plugin registering nothing, or unknown, answers Queue.
func TestQueueingHintAsksTheRejectingPluginAsKubeSchedulerDoes(t *testing.T) {
	nodeAdd := framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add}
	nodeTaint := framework.ClusterEvent{Resource: framework.Node, ActionType: framework.UpdateNodeTaint}
	podDelete := framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Delete}
	for _, c := range []struct {
		name    string
		plugin  framework.Plugin
		evt     framework.ClusterEvent
		want    framework.QueueingHint
		wantErr bool
	}{
		{"a registered event gets the hint's Queue", hinted{answer: framework.Queue}, nodeAdd, framework.Queue, false},
		{"a registered event gets the hint's QueueSkip", hinted{answer: framework.QueueSkip}, nodeAdd, framework.QueueSkip, false},
		{"a failing hint queues", hinted{answer: framework.QueueSkip, err: errors.New("boom")}, nodeAdd, framework.Queue, true},
		{"a registered event without a hint queues", hinted{answer: framework.QueueSkip}, podDelete, framework.Queue, false},
		{"an event not registered is skipped", hinted{answer: framework.Queue}, nodeTaint, framework.QueueSkip, false},
		{"a plugin registering nothing queues for anything", silent{}, nodeTaint, framework.Queue, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := Registry{c.plugin.Name(): func(any, framework.Handle) (framework.Plugin, error) { return c.plugin, nil }}
			f, err := New(reg, []PluginConfig{{Name: c.plugin.Name()}}, Options{Snapshot: cache.NewEmptySnapshot()})
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.QueueingHint(c.plugin.Name(), &v1.Pod{}, c.evt, nil, &v1.Node{})
			if got != c.want || (err != nil) != c.wantErr {
				t.Errorf("got %v, %v; want %v (error: %v)", got, err, c.want, c.wantErr)
			}
		})
	}
	f, err := New(Registry{}, nil, Options{Snapshot: cache.NewEmptySnapshot()})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := f.QueueingHint("NodeAdded", &v1.Pod{}, nodeTaint, nil, &v1.Node{}); got != framework.Queue {
		t.Errorf("a rejector not in the profile answered %v, want Queue", got)
	}
}

// TestQueueingHintRunsAreTimed: each hint function run is observed in
// scheduler_queueing_hint_execution_duration_seconds by plugin, event and
// answer, as kube-scheduler labels them; events answered without a hint
// function are not.
func TestQueueingHintRunsAreTimed(t *testing.T) {
	m := metrics.New()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.Collectors()...)
	p := hinted{answer: framework.QueueSkip}
	f, err := New(Registry{"Hinted": func(any, framework.Handle) (framework.Plugin, error) { return p, nil }},
		[]PluginConfig{{Name: "Hinted"}}, Options{Snapshot: cache.NewEmptySnapshot(), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	f.QueueingHint("Hinted", &v1.Pod{}, framework.ClusterEvent{Resource: framework.Node, ActionType: framework.UpdateNodeLabel}, &v1.Node{}, &v1.Node{})
	f.QueueingHint("Hinted", &v1.Pod{}, framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Delete}, &v1.Pod{}, nil)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, fam := range families {
		if fam.GetName() != "scheduler_queueing_hint_execution_duration_seconds" {
			continue
		}
		found = true
		if len(fam.GetMetric()) != 1 {
			t.Fatalf("%d series, want 1 (the run without a hint function is not one)", len(fam.GetMetric()))
		}
		m := fam.GetMetric()[0]
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["plugin"] != "Hinted" || labels["event"] != "NodeUpdateNodeLabel" || labels["hint"] != "QueueSkip" || m.GetHistogram().GetSampleCount() != 1 {
			t.Errorf("observed %v, %d samples", labels, m.GetHistogram().GetSampleCount())
		}
	}
	if !found {
		t.Fatal("no scheduler_queueing_hint_execution_duration_seconds")
	}
}
