package nodeaffinity

import (
	"testing"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// The cases are kube-scheduler's TestIsSchedulableAfterNodeChange (less
// those of the scheduler-enforced added affinity, which skiff has not).
func TestIsSchedulableAfterNodeChange(t *testing.T) {
	selecting := schedtest.MakePod().NodeSelector("foo", "bar").Obj()
	withAffinity := schedtest.MakePod().RequiredNodeAffinityIn("foo", "bar").Obj()
	node := func(kv ...string) any {
		n := schedtest.MakeNode()
		for i := 0; i+1 < len(kv); i += 2 {
			n.Label(kv[i], kv[i+1])
		}
		return n.Obj()
	}
	schedtest.RunHintCases(t, isSchedulableAfterNodeChange, []schedtest.HintCase{
		{Name: "an object that is no node is an error, and queues", Pod: selecting, New: "not-a-node", Want: framework.Queue, WantErr: true},
		{Name: "an old object that is no node is an error, and queues", Pod: selecting, Old: "not-a-node", New: node(), Want: framework.Queue, WantErr: true},
		{Name: "a node added that the selector refuses is skipped", Pod: selecting, New: node(), Want: framework.QueueSkip},
		{Name: "a node added that the selector takes queues", Pod: selecting, New: node("foo", "bar"), Want: framework.Queue},
		{Name: "a node added that the affinity takes queues", Pod: withAffinity, New: node("foo", "bar"), Want: framework.Queue},
		{Name: "a node added that the affinity refuses is skipped", Pod: withAffinity, New: node("foo", "baz"), Want: framework.QueueSkip},
		{Name: "a node that matched already is skipped", Pod: selecting, Old: node("foo", "bar"), New: node("foo", "bar", "x", "y"), Want: framework.QueueSkip},
		{Name: "a node relabelled to match queues", Pod: selecting, Old: node(), New: node("foo", "bar"), Want: framework.Queue},
		{Name: "a node relabelled still not matching is skipped", Pod: selecting, Old: node(), New: node("foo", "baz"), Want: framework.QueueSkip},
		{Name: "a pod without selector or affinity queues for any node", Pod: schedtest.MakePod().Obj(), New: node(), Want: framework.Queue},
	})
}
