package interpodaffinity

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

func newPlugin(t *testing.T) *InterPodAffinity {
	t.Helper()
	p, err := New(nil, schedtest.Handle(t))
	if err != nil {
		t.Fatal(err)
	}
	return p.(*InterPodAffinity)
}

// The cases are kube-scheduler's Test_isSchedulableAfterPodChange, plus the
// two cases upstream fixed after v1.33 (a deleted pod whose own
// anti-affinity kept the pod out, and one anti-affinity term of several
// matching), and a deleted nominated pod.
func TestIsSchedulableAfterPodChange(t *testing.T) {
	pl := newPlugin(t)
	affine := schedtest.MakePod().Name("p").PodAffinity("region", "service", "securityscan").Obj()
	twoTerms := schedtest.MakePod().Name("p").PodAffinity("hostname", "aaa", "a").PodAffinity("hostname", "bbb", "b").Obj()
	anti := schedtest.MakePod().Name("p").PodAntiAffinity("region", "service", "securityscan").Obj()
	antiTwoTerms := schedtest.MakePod().Name("p").PodAntiAffinity("region", "service", "securityscan").PodAntiAffinity("region", "team", "x").Obj()
	plain := schedtest.MakePod().Name("p").Label("app", "web").Obj()
	placed := func(kv ...string) *v1.Pod {
		w := schedtest.MakePod().Name("other").Node("n")
		for i := 0; i+1 < len(kv); i += 2 {
			w.Label(kv[i], kv[i+1])
		}
		return w.Obj()
	}
	pending := schedtest.MakePod().Name("other").Label("service", "securityscan").Obj()
	nominated := schedtest.MakePod().Name("other").Label("service", "securityscan").Obj()
	nominated.Status.NominatedNodeName = "n"
	hater := schedtest.MakePod().Name("other").Node("n").PodAntiAffinity("region", "app", "web").Obj()
	otherHater := schedtest.MakePod().Name("other").Node("n").PodAntiAffinity("region", "app", "db").Obj()

	schedtest.RunHintCases(t, pl.isSchedulableAfterPodChange, []schedtest.HintCase{
		{Name: "an object that is no pod is an error, and queues", Pod: affine, New: "not-a-pod", Want: framework.Queue, WantErr: true},
		{Name: "add a pod which matches the pod affinity", Pod: affine, New: placed("service", "securityscan"), Want: framework.Queue},
		{Name: "add an un-scheduled pod", Pod: affine, New: pending, Want: framework.QueueSkip},
		{Name: "add a pod which doesn't match the pod affinity", Pod: affine, New: placed("aaa", "a"), Want: framework.QueueSkip},
		{Name: "update a pod from non-match to match pod affinity", Pod: affine, Old: placed("aaa", "a"), New: placed("service", "securityscan"), Want: framework.Queue},
		{Name: "the updating pod matches the affinity both before and after", Pod: affine, Old: placed("service", "securityscan", "x", "1"), New: placed("service", "securityscan", "x", "2"), Want: framework.QueueSkip},
		{Name: "update an un-scheduled pod", Pod: affine, Old: pending, New: pending, Want: framework.QueueSkip},
		{Name: "update a pod from match to non-match the pod affinity", Pod: affine, Old: placed("service", "securityscan"), New: placed("aaa", "a"), Want: framework.QueueSkip},
		{Name: "update a pod from match to non-match - multiple terms", Pod: twoTerms, Old: placed("aaa", "a"), New: placed("service", "securityscan"), Want: framework.QueueSkip},
		{Name: "update a pod from non-match to match - multiple terms", Pod: twoTerms, Old: placed("aaa", "a"), New: placed("aaa", "a", "bbb", "b"), Want: framework.Queue},
		{Name: "relabel a pod from matching the anti-affinity to not", Pod: anti, Old: placed("service", "securityscan"), New: placed("service", "aaaa"), Want: framework.Queue},
		{Name: "relabel a pod from not matching the anti-affinity to matching", Pod: anti, Old: placed("service", "bbb"), New: placed("service", "securityscan"), Want: framework.QueueSkip},
		{Name: "delete a pod which doesn't match the anti-affinity", Pod: anti, Old: placed("aaa", "a"), Want: framework.QueueSkip},
		{Name: "delete a pod which matches the anti-affinity", Pod: anti, Old: placed("service", "securityscan"), Want: framework.Queue},
		{Name: "delete a pod which matches one of two anti-affinity terms", Pod: antiTwoTerms, Old: placed("service", "securityscan"), Want: framework.Queue},
		{Name: "delete a pod whose anti-affinity selects the pod", Pod: plain, Old: hater, Want: framework.Queue},
		{Name: "delete a pod whose anti-affinity selects other pods", Pod: plain, Old: otherHater, Want: framework.QueueSkip},
		{Name: "delete a nominated pod which matches the anti-affinity", Pod: anti, Old: nominated, Want: framework.Queue},
		{Name: "delete an un-scheduled, un-nominated pod", Pod: anti, Old: pending, Want: framework.QueueSkip},
		{Name: "a pod without terms is skipped for any added pod", Pod: plain, New: placed("service", "securityscan"), Want: framework.QueueSkip},
	})
}

// The cases are kube-scheduler's Test_isSchedulableAfterNodeChange.
func TestIsSchedulableAfterNodeChange(t *testing.T) {
	pl := newPlugin(t)
	affZone := schedtest.MakePod().Name("p").PodAffinity("zone", "service", "securityscan").Obj()
	affRegion := schedtest.MakePod().Name("p").PodAffinity("region", "service", "securityscan").Obj()
	antiZone := schedtest.MakePod().Name("p").PodAntiAffinity("zone", "another", "label").Obj()
	node := func(kv ...string) *v1.Node {
		n := &v1.Node{}
		n.Name = "node-a"
		n.Labels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
		return n
	}
	schedtest.RunHintCases(t, pl.isSchedulableAfterNodeChange, []schedtest.HintCase{
		{Name: "an object that is no node is an error, and queues", Pod: affZone, New: "not-a-node", Want: framework.Queue, WantErr: true},
		// affinity
		{Name: "add a node with the affinity topologyKey", Pod: affZone, New: node("zone", "zone1"), Want: framework.Queue},
		{Name: "add a node without the topologyKey", Pod: affRegion, New: node("zone", "zone1"), Want: framework.QueueSkip},
		{Name: "update a label other than the topologyKey", Pod: affZone, Old: node("aaa", "a"), New: node("aaa", "b"), Want: framework.QueueSkip},
		{Name: "add an unrelated label", Pod: affZone, Old: node("zone", "zone1"), New: node("zone", "zone1", "unrelated-label", "unrelated"), Want: framework.QueueSkip},
		{Name: "change the affinity topologyKey's value", Pod: affZone, Old: node("zone", "zone1"), New: node("zone", "zone2"), Want: framework.Queue},
		{Name: "gain the affinity topology label", Pod: affZone, Old: node("aaa", "a"), New: node("zone", "zone1"), Want: framework.Queue},
		// anti-affinity
		{Name: "add a node with the anti-affinity topologyKey", Pod: antiZone, New: node("zone", "zone1"), Want: framework.Queue},
		{Name: "add a node without the anti-affinity topologyKey", Pod: antiZone, New: node(), Want: framework.Queue},
		{Name: "add an unrelated label (anti-affinity)", Pod: antiZone, Old: node("zone", "zone1"), New: node("zone", "zone1", "unrelated-label", "unrelated"), Want: framework.QueueSkip},
		{Name: "change the anti-affinity topologyKey's value", Pod: antiZone, Old: node("zone", "zone1"), New: node("zone", "zone2"), Want: framework.Queue},
		{Name: "gain the anti-affinity topology label", Pod: antiZone, Old: node("aaa", "a"), New: node("zone", "zone1"), Want: framework.QueueSkip},
		{Name: "lose the anti-affinity topology label", Pod: antiZone, Old: node("zone", "zone1"), New: node("aaa", "a"), Want: framework.Queue},
	})
}
