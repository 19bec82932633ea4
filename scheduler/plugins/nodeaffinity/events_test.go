package nodeaffinity

import (
	"testing"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

func hintNode(kv ...string) any {
	n := schedtest.MakeNode()
	for i := 0; i+1 < len(kv); i += 2 {
		n.Label(kv[i], kv[i+1])
	}
	return n.Obj()
}

// The cases are kube-scheduler's TestIsSchedulableAfterNodeChange.
func TestIsSchedulableAfterNodeChange(t *testing.T) {
	selecting := schedtest.MakePod().NodeSelector("foo", "bar").Obj()
	withAffinity := schedtest.MakePod().RequiredNodeAffinityIn("foo", "bar").Obj()
	node := hintNode
	schedtest.RunHintCases(t, newWith(t, Args{}).isSchedulableAfterNodeChange, []schedtest.HintCase{
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

// With the profile's added affinity, a node must match it as well as the
// pod's own terms. kube-scheduler v1.33 compares only the pod's own terms
// of the old and new node, so it skips a node relabelled into the added
// affinity when the pod's terms matched it already (such a pod waits for
// the five-minute flush); skiff queues it.
func TestIsSchedulableAfterNodeChangeWithAddedAffinity(t *testing.T) {
	withAffinity := schedtest.MakePod().RequiredNodeAffinityIn("foo", "bar").Obj()
	plain := schedtest.MakePod().Obj()
	node := hintNode
	schedtest.RunHintCases(t, newWith(t, addedRequired(labelTerm("zone", "a"))).isSchedulableAfterNodeChange, []schedtest.HintCase{
		{Name: "a node added that the added affinity refuses is skipped", Pod: withAffinity, New: node("foo", "bar"), Want: framework.QueueSkip},
		{Name: "a node added that both take queues", Pod: withAffinity, New: node("foo", "bar", "zone", "a"), Want: framework.Queue},
		{Name: "a node added that only the added affinity takes is skipped", Pod: withAffinity, New: node("zone", "a"), Want: framework.QueueSkip},
		{Name: "a node added that the added affinity takes queues a pod without affinity", Pod: plain, New: node("zone", "a"), Want: framework.Queue},
		{Name: "a node relabelled into the added affinity queues a pod without affinity", Pod: plain, Old: node("zone", "b"), New: node("zone", "a"), Want: framework.Queue},
		{Name: "a node relabelled into the added affinity queues a pod whose terms it matched", Pod: withAffinity,
			Old: node("foo", "bar"), New: node("foo", "bar", "zone", "a"), Want: framework.Queue},
		{Name: "a node relabelled into the pod's terms, still outside the added affinity, is skipped", Pod: withAffinity,
			Old: node(), New: node("foo", "bar"), Want: framework.QueueSkip},
		{Name: "a node that matched both already is skipped", Pod: withAffinity,
			Old: node("foo", "bar", "zone", "a"), New: node("foo", "bar", "zone", "a", "x", "y"), Want: framework.QueueSkip},
		{Name: "a node relabelled out of the added affinity is skipped", Pod: plain, Old: node("zone", "a"), New: node("zone", "b"), Want: framework.QueueSkip},
	})
}
