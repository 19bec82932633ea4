package nodeports

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// The cases are kube-scheduler's TestNodePortsIsSchedulableAfterPodDeleted
// (plus the nominated pod, which holds its ports to lower priorities there too).
func TestIsSchedulableAfterPodDeleted(t *testing.T) {
	wants80 := schedtest.MakePod().Name("p").HostPort(v1.ProtocolTCP, "", 80).Obj()
	placed := func(port int32) *v1.Pod {
		return schedtest.MakePod().Name("placed").Node("n").HostPort(v1.ProtocolTCP, "", port).Obj()
	}
	nominated := schedtest.MakePod().Name("nominated").HostPort(v1.ProtocolTCP, "", 80).Obj()
	nominated.Status.NominatedNodeName = "n"
	schedtest.RunHintCases(t, isSchedulableAfterPodDeleted, []schedtest.HintCase{
		{Name: "an object that is no pod is an error, and queues", Pod: wants80, Old: "not-a-pod", Want: framework.Queue, WantErr: true},
		{Name: "a placed pod holding the port queues", Pod: wants80, Old: placed(80), Want: framework.Queue},
		{Name: "a nominated pod holding the port queues", Pod: wants80, Old: nominated, Want: framework.Queue},
		{Name: "an unplaced pod is skipped", Pod: wants80, Old: schedtest.MakePod().Name("pending").HostPort(v1.ProtocolTCP, "", 80).Obj(), Want: framework.QueueSkip},
		{Name: "a placed pod holding another port is skipped", Pod: wants80, Old: placed(8080), Want: framework.QueueSkip},
		{Name: "a placed pod without host ports is skipped", Pod: wants80, Old: schedtest.MakePod().Name("placed").Node("n").Obj(), Want: framework.QueueSkip},
		{Name: "the same port on UDP is skipped", Pod: wants80, Old: schedtest.MakePod().Name("placed").Node("n").HostPort(v1.ProtocolUDP, "", 80).Obj(), Want: framework.QueueSkip},
	})
}
