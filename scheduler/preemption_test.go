package scheduler

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// preemptFor runs an attempt for pod that must fail, then the profile's
// PostFilter (DefaultPreemption) on its outcome, as scheduleOne does.
func preemptFor(t *testing.T, s *Scheduler, pod *v1.Pod) (*framework.PostFilterResult, *framework.Status) {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	_, err := s.schedulePod(ctx, state, pod)
	var fe *framework.FitError
	if !errors.As(err, &fe) {
		t.Fatalf("%s: want a FitError before preemption, got %v", pod.Name, err)
	}
	return s.fwk.RunPostFilterPlugins(ctx, state, pod, fe.Diagnosis.NodeToStatus)
}

// TestPreemptionLeavesTheRoomKeptForANominatedPod: preemption's dry run
// counts the pods nominated to a node of priority at least the preemptor's,
// as kube-scheduler's SelectVictimsOnNode (RunFilterPluginsWithNominatedPods):
// evicting n1's cheap victim would only free room already promised to a more
// important pod, so the preemptor evicts on n2 instead.
func TestPreemptionLeavesTheRoomKeptForANominatedPod(t *testing.T) {
	s := newHandlerTestScheduler(t)
	s.onNodeAdd(schedtest.MakeNode().Name("n1").Capacity("cpu", "1", "pods", "10").Obj())
	s.onNodeAdd(schedtest.MakeNode().Name("n2").Capacity("cpu", "1", "pods", "10").Obj())
	s.onPodAdd(schedtest.MakePod().Name("a").UID("a").Node("n1").Priority(0).Req("cpu", "1").Obj())
	s.onPodAdd(schedtest.MakePod().Name("b").UID("b").Node("n2").Priority(500).Req("cpu", "1").Obj())
	nominated := schedtest.MakePod().Name("nominated").UID("nominated").Priority(2000).Req("cpu", "1").Obj()
	nominated.Status.NominatedNodeName = "n1"
	s.onPodAdd(nominated)

	res, st := preemptFor(t, s, schedtest.MakePod().Name("vip").UID("vip").Priority(1000).Req("cpu", "1").Obj())
	if !st.IsSuccess() || res == nil || res.NominatedNodeName != "n2" {
		t.Fatalf("result %+v status %v, want n2 nominated (n1's free room is the nominated pod's)", res, st)
	}

	// A pod more important than the nominated one may take that room.
	res, st = preemptFor(t, s, schedtest.MakePod().Name("vvip").UID("vvip").Priority(3000).Req("cpu", "1").Obj())
	if !st.IsSuccess() || res == nil || res.NominatedNodeName != "n1" {
		t.Fatalf("result %+v status %v, want n1 nominated (its victim is the cheapest)", res, st)
	}
}
