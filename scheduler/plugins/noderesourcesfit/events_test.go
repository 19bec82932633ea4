package noderesourcesfit

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// The cases are kube-scheduler's TestFitScaleDown / isSchedulableAfterPodEvent
// table: any placed pod deleted queues, a resize queues only when it gives
// back something the pod requests.
func TestIsSchedulableAfterPodEvent(t *testing.T) {
	target := schedtest.MakePod().Name("target").UID("target").Req("cpu", "1").Obj()
	placed := func(kv ...string) *v1.Pod {
		return schedtest.MakePod().Name("placed").UID("placed").Node("n").Req(kv...).Obj()
	}
	pending := func(kv ...string) *v1.Pod {
		return schedtest.MakePod().Name("pending").UID("pending").Req(kv...).Obj()
	}
	nominated := pending("cpu", "2")
	nominated.Status.NominatedNodeName = "n"
	schedtest.RunHintCases(t, isSchedulableAfterPodEvent, []schedtest.HintCase{
		{Name: "an object that is no pod is an error, and queues", Pod: target, Old: "not-a-pod", Want: framework.Queue, WantErr: true},
		{Name: "a placed pod deleted queues", Pod: target, Old: placed("cpu", "2"), Want: framework.Queue},
		{Name: "a placed pod requesting nothing the pod wants, deleted, queues still", Pod: target, Old: placed("memory", "1Gi"), Want: framework.Queue},
		{Name: "a nominated pod deleted queues", Pod: target, Old: nominated, Want: framework.Queue},
		{Name: "an unplaced pod deleted is skipped", Pod: target, Old: pending("cpu", "2"), Want: framework.QueueSkip},
		{Name: "a placed pod scaled down in cpu queues", Pod: target, Old: placed("cpu", "2"), New: placed("cpu", "1"), Want: framework.Queue},
		{Name: "a placed pod scaled up is skipped", Pod: target, Old: placed("cpu", "1"), New: placed("cpu", "2"), Want: framework.QueueSkip},
		{Name: "a placed pod scaled down in a resource the pod does not request is skipped", Pod: target,
			Old: placed("cpu", "1", "memory", "2Gi"), New: placed("cpu", "1", "memory", "1Gi"), Want: framework.QueueSkip},
		{Name: "a placed pod scaled down in an extended resource the pod requests queues",
			Pod: schedtest.MakePod().UID("target").Req("example.com/gpu", "1").Obj(),
			Old: placed("example.com/gpu", "2"), New: placed("example.com/gpu", "1"), Want: framework.Queue},
		{Name: "an unplaced pod scaled down is skipped", Pod: target, Old: pending("cpu", "2"), New: pending("cpu", "1"), Want: framework.QueueSkip},
		{Name: "the pod itself scaled down queues", Pod: target, Old: target, New: schedtest.MakePod().Name("target").UID("target").Req("cpu", "500m").Obj(), Want: framework.Queue},
	})
}

// The cases are kube-scheduler's TestIsSchedulableAfterNodeChange.
func TestIsSchedulableAfterNodeChange(t *testing.T) {
	node := func(kv ...string) *v1.Node { return schedtest.MakeNode().Name("n").Capacity(kv...).Obj() }
	pod := schedtest.MakePod().Req("cpu", "1", "memory", "1Gi").Obj()
	schedtest.RunHintCases(t, isSchedulableAfterNodeChange, []schedtest.HintCase{
		{Name: "an object that is no node is an error, and queues", Pod: pod, New: "not-a-node", Want: framework.Queue, WantErr: true},
		{Name: "an old object that is no node is an error, and queues", Pod: pod, Old: "not-a-node", New: node("cpu", "2", "memory", "2Gi"), Want: framework.Queue, WantErr: true},
		{Name: "a node added with enough resources queues", Pod: pod, New: node("cpu", "2", "memory", "2Gi"), Want: framework.Queue},
		{Name: "a node added with too little cpu is skipped", Pod: pod, New: node("cpu", "500m", "memory", "2Gi"), Want: framework.QueueSkip},
		{Name: "a node added with no room for a pod is skipped", Pod: pod, New: node("cpu", "2", "memory", "2Gi", "pods", "0"), Want: framework.QueueSkip},
		{Name: "a node updated still too small is skipped", Pod: pod, Old: node("cpu", "500m", "memory", "2Gi"), New: node("cpu", "900m", "memory", "2Gi"), Want: framework.QueueSkip},
		{Name: "a node grown enough in cpu queues", Pod: pod, Old: node("cpu", "500m", "memory", "2Gi"), New: node("cpu", "2", "memory", "2Gi"), Want: framework.Queue},
		{Name: "a node grown in a resource the pod does not request is skipped", Pod: pod,
			Old: node("cpu", "2", "memory", "2Gi"), New: node("cpu", "2", "memory", "2Gi", "example.com/gpu", "1"), Want: framework.QueueSkip},
		{Name: "a node grown in pod capacity queues", Pod: pod, Old: node("cpu", "2", "memory", "2Gi", "pods", "1"), New: node("cpu", "2", "memory", "2Gi", "pods", "2"), Want: framework.Queue},
		{Name: "a node grown in an extended resource the pod requests queues", Pod: schedtest.MakePod().Req("example.com/gpu", "1").Obj(),
			Old: node("example.com/gpu", "1"), New: node("example.com/gpu", "2"), Want: framework.Queue},
		{Name: "a node that shrank but still fits is skipped", Pod: pod, Old: node("cpu", "4", "memory", "2Gi"), New: node("cpu", "2", "memory", "2Gi"), Want: framework.QueueSkip},
		{Name: "a pod requesting nothing queues for any node added", Pod: schedtest.MakePod().Obj(), New: node(), Want: framework.Queue},
		{Name: "a pod requesting nothing is skipped for a node update not adding pod room", Pod: schedtest.MakePod().Obj(), Old: node("cpu", "1"), New: node("cpu", "2"), Want: framework.QueueSkip},
	})
}
