package podtopologyspread

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

func newPlugin(t *testing.T) *PodTopologySpread {
	t.Helper()
	p, err := New(nil, schedtest.Handle(t))
	if err != nil {
		t.Fatal(err)
	}
	return p.(*PodTopologySpread)
}

// The cases follow kube-scheduler's Test_isSchedulableAfterPodChange, plus
// a deleted nominated pod.
func TestIsSchedulableAfterPodChange(t *testing.T) {
	pl := newPlugin(t)
	spread := schedtest.MakePod().Name("p").Label("foo", "").
		SpreadConstraint(1, "zone", v1.DoNotSchedule, "foo", "").
		SpreadConstraint(1, "node", v1.DoNotSchedule, "bar", "").Obj()
	soft := schedtest.MakePod().Name("p").SpreadConstraint(1, "zone", v1.ScheduleAnyway, "foo", "").Obj()
	placed := func(kv ...string) *v1.Pod {
		w := schedtest.MakePod().Name("other").Node("n")
		for i := 0; i+1 < len(kv); i += 2 {
			w.Label(kv[i], kv[i+1])
		}
		return w.Obj()
	}
	elsewhere := placed("foo", "")
	elsewhere.Namespace = "ns2"
	pending := schedtest.MakePod().Name("other").Label("foo", "").Obj()
	nominated := schedtest.MakePod().Name("other").Label("foo", "").Obj()
	nominated.Status.NominatedNodeName = "n"

	schedtest.RunHintCases(t, pl.isSchedulableAfterPodChange, []schedtest.HintCase{
		{Name: "an object that is no pod is an error, and queues", Pod: spread, New: "not-a-pod", Want: framework.Queue, WantErr: true},
		{Name: "add a placed pod matching a selector", Pod: spread, New: placed("foo", ""), Want: framework.Queue},
		{Name: "add an un-scheduled pod", Pod: spread, New: pending, Want: framework.QueueSkip},
		{Name: "add a pod in another namespace", Pod: spread, New: elsewhere, Want: framework.QueueSkip},
		{Name: "add a pod matching no selector", Pod: spread, New: placed("baz", ""), Want: framework.QueueSkip},
		{Name: "a pod with only soft constraints is skipped", Pod: soft, New: placed("foo", ""), Want: framework.QueueSkip},
		{Name: "update a pod's label to match a selector", Pod: spread, Old: placed("baz", ""), New: placed("foo", ""), Want: framework.Queue},
		{Name: "update a pod's label to match no selector any more", Pod: spread, Old: placed("foo", ""), New: placed("baz", ""), Want: framework.Queue},
		{Name: "update a label that changes no selector's answer", Pod: spread, Old: placed("foo", "", "x", "1"), New: placed("foo", "", "x", "2"), Want: framework.QueueSkip},
		{Name: "update without a label change", Pod: spread, Old: placed("foo", ""), New: placed("foo", ""), Want: framework.QueueSkip},
		{Name: "delete a placed pod matching a selector", Pod: spread, Old: placed("bar", ""), Want: framework.Queue},
		{Name: "delete a placed pod matching no selector", Pod: spread, Old: placed("baz", ""), Want: framework.QueueSkip},
		{Name: "delete a nominated pod matching a selector", Pod: spread, Old: nominated, Want: framework.Queue},
		{Name: "delete an un-scheduled pod", Pod: spread, Old: pending, Want: framework.QueueSkip},
	})
}

// The cases follow kube-scheduler's Test_isSchedulableAfterNodeChange.
func TestIsSchedulableAfterNodeChange(t *testing.T) {
	pl := newPlugin(t)
	zone := schedtest.MakePod().Name("p").SpreadConstraint(1, "zone", v1.DoNotSchedule, "foo", "").Obj()
	zoneAndNode := schedtest.MakePod().Name("p").SpreadConstraint(1, "zone", v1.DoNotSchedule, "foo", "").
		SpreadConstraint(1, "node", v1.DoNotSchedule, "foo", "").Obj()
	node := func(kv ...string) *v1.Node {
		n := &v1.Node{}
		n.Name = "node-a"
		n.Labels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
		return n
	}
	tainted := func(n *v1.Node) *v1.Node {
		n.Spec.Taints = []v1.Taint{{Key: "k", Value: "v", Effect: v1.TaintEffectNoSchedule}}
		return n
	}
	schedtest.RunHintCases(t, pl.isSchedulableAfterNodeChange, []schedtest.HintCase{
		{Name: "an object that is no node is an error, and queues", Pod: zone, New: "not-a-node", Want: framework.Queue, WantErr: true},
		{Name: "add a node with the topology key", Pod: zone, New: node("zone", "zone1"), Want: framework.Queue},
		{Name: "add a node without the topology key", Pod: zone, New: node("aaa", "a"), Want: framework.QueueSkip},
		{Name: "add a node with only one of two topology keys", Pod: zoneAndNode, New: node("zone", "zone1"), Want: framework.QueueSkip},
		{Name: "add a node with both topology keys", Pod: zoneAndNode, New: node("zone", "zone1", "node", "node-a"), Want: framework.Queue},
		{Name: "delete a node with the topology key", Pod: zone, Old: node("zone", "zone1"), Want: framework.Queue},
		{Name: "delete a node without the topology key", Pod: zone, Old: node("aaa", "a"), Want: framework.QueueSkip},
		{Name: "change the topology key's value", Pod: zone, Old: node("zone", "zone1"), New: node("zone", "zone2"), Want: framework.Queue},
		{Name: "change an unrelated label", Pod: zone, Old: node("zone", "zone1", "aaa", "a"), New: node("zone", "zone1", "aaa", "b"), Want: framework.QueueSkip},
		{Name: "gain the topology key", Pod: zone, Old: node("aaa", "a"), New: node("zone", "zone1"), Want: framework.Queue},
		{Name: "lose the topology key", Pod: zone, Old: node("zone", "zone1"), New: node("aaa", "a"), Want: framework.Queue},
		{Name: "change labels of a node without the topology key", Pod: zone, Old: node("aaa", "a"), New: node("aaa", "b"), Want: framework.QueueSkip},
		{Name: "change taints of a node with the topology key", Pod: zone, Old: tainted(node("zone", "zone1")), New: node("zone", "zone1"), Want: framework.Queue},
		{Name: "change taints of a node without the topology key", Pod: zone, Old: tainted(node("aaa", "a")), New: node("aaa", "a"), Want: framework.QueueSkip},
	})
}
