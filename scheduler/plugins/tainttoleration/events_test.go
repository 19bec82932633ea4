package tainttoleration

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// The cases are kube-scheduler's TestIsSchedulableAfterNodeChange.
func TestIsSchedulableAfterNodeChange(t *testing.T) {
	tolerates := func(v string) *v1.Pod {
		return schedtest.MakePod().Toleration("dedicated", v1.TolerationOpEqual, v, v1.TaintEffectNoSchedule).Obj()
	}
	tainted := func(vs ...string) *v1.Node {
		n := schedtest.MakeNode().Name("nodeA")
		for _, v := range vs {
			n.Taint("dedicated", v, v1.TaintEffectNoSchedule)
		}
		return n.Obj()
	}
	schedtest.RunHintCases(t, isSchedulableAfterNodeChange, []schedtest.HintCase{
		{Name: "an object that is no node is an error, and queues", New: "not-a-node", Want: framework.Queue, WantErr: true},
		{Name: "an old object that is no node is an error, and queues", Old: "not-a-node", New: tainted("user1"), Want: framework.Queue, WantErr: true},
		{Name: "a node added with an untolerated taint is skipped", Pod: tolerates("user2"), New: tainted("user1"), Want: framework.QueueSkip},
		{Name: "a node added with only tolerated taints queues", Pod: tolerates("user2"), New: tainted("user2"), Want: framework.Queue},
		{Name: "a taint added to a node still untolerated is skipped", Pod: tolerates("user2"), Old: tainted("user1"), New: tainted("user1", "user3"), Want: framework.QueueSkip},
		{Name: "an untolerated taint replaced by a tolerated one queues", Pod: tolerates("user2"), Old: tainted("user1"), New: tainted("user2"), Want: framework.Queue},
		// A node the pod tolerated already was not where the plugin rejected it.
		{Name: "a change of a node tolerated before is skipped", Pod: tolerates("user2"), Old: tainted("user2"), New: tainted(), Want: framework.QueueSkip},
		{Name: "an untolerated taint removed queues", Pod: tolerates("user2"), Old: tainted("user1"), New: tainted(), Want: framework.Queue},
		{Name: "a PreferNoSchedule taint is no obstacle", Pod: &v1.Pod{}, New: schedtest.MakeNode().Taint("soft", "", v1.TaintEffectPreferNoSchedule).Obj(), Want: framework.Queue},
	})
}
