package scheduler

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// tryPlace runs one scheduling attempt for pod and returns the chosen node
// or the failure message.
func tryPlace(t *testing.T, s *Scheduler, pod *v1.Pod) string {
	t.Helper()
	host, err := s.schedulePod(context.Background(), framework.NewCycleState(), pod)
	if err != nil {
		var fe *framework.FitError
		if !errors.As(err, &fe) {
			t.Fatalf("%s: %v", pod.Name, err)
		}
		return err.Error()
	}
	return host
}

// TestNominatedPodsKeepTheirRoom: the room preemption freed on a node is
// kept for the pod nominated there, as kube-scheduler's Filter with
// nominated pods: a pod of lower or equal priority does not fit in it, a
// more important one does, and once the nominated pod goes the room is
// anyone's.
func TestNominatedPodsKeepTheirRoom(t *testing.T) {
	s := newHandlerTestScheduler(t)
	s.onNodeAdd(schedtest.MakeNode().Name("n").Capacity("cpu", "2", "pods", "10").Obj())
	s.onPodAdd(schedtest.MakePod().Name("running").UID("running").Node("n").Req("cpu", "1").Obj())
	nominated := schedtest.MakePod().Name("nominated").UID("nominated").Priority(100).Req("cpu", "1").Obj()
	nominated.Status.NominatedNodeName = "n"
	s.onPodAdd(nominated)

	full := "0/1 nodes are available: 1 Insufficient cpu."
	for _, prio := range []int32{0, 100} {
		pod := schedtest.MakePod().Name("other").UID("other").Priority(prio).Req("cpu", "1").Obj()
		if got := tryPlace(t, s, pod); got != full {
			t.Errorf("priority %d: got %q, want %q", prio, got, full)
		}
	}
	if got := tryPlace(t, s, schedtest.MakePod().Name("vip").UID("vip").Priority(1000).Req("cpu", "1").Obj()); got != "n" {
		t.Errorf("a more important pod: got %q, want n", got)
	}
	if got := tryPlace(t, s, nominated); got != "n" {
		t.Errorf("the nominated pod itself: got %q, want n", got)
	}
	// A pod that does not compete for the room still fits beside it.
	if got := tryPlace(t, s, schedtest.MakePod().Name("small").UID("small").Obj()); got != "n" {
		t.Errorf("a pod without requests: got %q, want n", got)
	}

	// Nominated elsewhere: the room on n is free again.
	moved := nominated.DeepCopy()
	moved.Status.NominatedNodeName = "elsewhere"
	s.onPodUpdate(nominated, moved)
	low := schedtest.MakePod().Name("low").UID("low").Req("cpu", "1").Obj()
	if got := tryPlace(t, s, low); got != "n" {
		t.Errorf("after the nomination moved: got %q, want n", got)
	}
	s.onPodUpdate(moved, nominated)
	if got := tryPlace(t, s, low); got != full {
		t.Errorf("after the nomination came back: got %q, want %q", got, full)
	}
	s.onPodDelete(nominated)
	if got := tryPlace(t, s, low); got != "n" {
		t.Errorf("after the nominated pod was deleted: got %q, want n", got)
	}
}

// An update that carries no nominated node (the scheduler's own status
// write not yet seen) keeps the nomination preemption just made.
func TestNominationSurvivesAnUpdateWithoutIt(t *testing.T) {
	n := newNominator()
	pod := schedtest.MakePod().Name("p").UID("p").Obj()
	n.add(pod, "n1")
	relabelled := pod.DeepCopy()
	relabelled.Labels = map[string]string{"a": "b"}
	n.update(pod, relabelled)
	if got := n.NominatedPodsForNode("n1"); len(got) != 1 || got[0].Pod != relabelled {
		t.Fatalf("nominated to n1: %v, want the updated pod", got)
	}
	// A status that drops its nominated node clears it.
	withNode := relabelled.DeepCopy()
	withNode.Status.NominatedNodeName = "n1"
	n.update(relabelled, withNode)
	n.update(withNode, relabelled)
	if got := n.NominatedPodsForNode("n1"); len(got) != 0 {
		t.Fatalf("nominated to n1 after the status cleared it: %v", got)
	}
}

// A pod that scheduling gates hold out of the active queue is not counted
// as nominated when it is added, as in kube-scheduler's queue, which tracks
// a new pod's nomination only once PreEnqueue let it in.
func TestGatedPodHoldsNoRoomWhenAdded(t *testing.T) {
	s := newHandlerTestScheduler(t)
	s.onNodeAdd(schedtest.MakeNode().Name("n").Capacity("cpu", "1", "pods", "10").Obj())
	gated := schedtest.MakePod().Name("gated").UID("gated").Priority(1000).Req("cpu", "1").Obj()
	gated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/wait"}}
	gated.Status.NominatedNodeName = "n"
	s.onPodAdd(gated)
	if got := s.nominator.NominatedPodsForNode("n"); len(got) != 0 {
		t.Fatalf("a gated pod is nominated to n: %v", got)
	}
	if got := tryPlace(t, s, schedtest.MakePod().Name("other").UID("other").Req("cpu", "1").Obj()); got != "n" {
		t.Fatalf("another pod: got %q, want n", got)
	}

	// Its gates gone, it is a pod like any other: its nomination counts.
	open := gated.DeepCopy()
	open.Spec.SchedulingGates = nil
	s.onPodUpdate(gated, open)
	if got := s.nominator.NominatedPodsForNode("n"); len(got) != 1 {
		t.Fatalf("nominated to n after the gates went: %v, want the pod", got)
	}
}

// As kube-scheduler's InterPodAffinity, whose PreFilter skips a pod without
// required affinity or anti-affinity terms that no placed pod's
// anti-affinity selects: the plugin's Filter then does not run, so the
// anti-affinity of a pod merely nominated to the node does not keep the
// pod out, whether or not some unrelated placed pod has anti-affinity of
// its own. A placed pod's anti-affinity selecting the pod does.
func TestNominatedPodsAntiAffinityCountsAsKubeSchedulerCountsIt(t *testing.T) {
	web := func() *v1.Pod { return schedtest.MakePod().Name("web").UID("web").Label("app", "web").Obj() }
	tests := []struct {
		name   string
		placed *v1.Pod
		want   string
	}{
		{name: "no placed pod has anti-affinity", want: "n"},
		{
			name:   "a placed pod's anti-affinity selects other pods",
			placed: schedtest.MakePod().Name("guard").UID("guard").Node("n").PodAntiAffinity(v1.LabelHostname, "app", "db").Obj(),
			want:   "n",
		},
		{
			name:   "a placed pod's anti-affinity selects the pod",
			placed: schedtest.MakePod().Name("guard").UID("guard").Node("n").PodAntiAffinity(v1.LabelTopologyZone, "app", "web").Obj(),
			want:   "0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules.",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newHandlerTestScheduler(t)
			s.onNodeAdd(schedtest.MakeNode().Name("n").Label(v1.LabelTopologyZone, "z").Capacity("cpu", "2").Obj())
			if tc.placed != nil {
				s.onPodAdd(tc.placed)
			}
			loner := schedtest.MakePod().Name("loner").UID("loner").Priority(100).PodAntiAffinity(v1.LabelHostname, "app", "web").Obj()
			loner.Status.NominatedNodeName = "n"
			s.onPodAdd(loner)
			if got := tryPlace(t, s, web()); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
