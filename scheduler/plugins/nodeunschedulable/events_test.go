package nodeunschedulable

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// The cases are kube-scheduler's TestIsSchedulableAfterNodeChange.
func TestIsSchedulableAfterNodeChange(t *testing.T) {
	cordoned := func() *schedtest.NodeWrapper { return schedtest.MakeNode().Unschedulable() }
	schedtest.RunHintCases(t, isSchedulableAfterNodeChange, []schedtest.HintCase{
		{Name: "an object that is no node is an error, and queues", New: "not-a-node", Want: framework.Queue, WantErr: true},
		{Name: "an old object that is no node is an error, and queues", Old: "not-a-node", New: cordoned().Obj(), Want: framework.Queue, WantErr: true},
		{Name: "an unschedulable node added is skipped", New: cordoned().Obj(), Want: framework.QueueSkip},
		{Name: "a schedulable node added queues", New: schedtest.MakeNode().Obj(), Want: framework.Queue},
		{Name: "an unrelated change of an unschedulable node is skipped", Old: cordoned().Obj(),
			New: cordoned().Taint(v1.TaintNodeNotReady, "", v1.TaintEffectNoExecute).Obj(), Want: framework.QueueSkip},
		{Name: "an unrelated change of a schedulable node is skipped", Old: schedtest.MakeNode().Obj(),
			New: schedtest.MakeNode().Taint(v1.TaintNodeNotReady, "", v1.TaintEffectNoExecute).Obj(), Want: framework.QueueSkip},
		{Name: "a node uncordoned queues", Old: cordoned().Obj(), New: schedtest.MakeNode().Obj(), Want: framework.Queue},
		{Name: "a node cordoned is skipped", Old: schedtest.MakeNode().Obj(), New: cordoned().Obj(), Want: framework.QueueSkip},
	})
}
