package scheduler

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// preemptFor runs an attempt for pod that must fail, then the profile's
// PostFilter (DefaultPreemption) on its outcome, as scheduleOne does. The
// pod goes into the informer's store first, where preemption reads it.
func preemptFor(t *testing.T, s *Scheduler, pod *v1.Pod) (*framework.PostFilterResult, *framework.Status) {
	t.Helper()
	if err := s.factory.Core().V1().Pods().Informer().GetIndexer().Add(pod); err != nil {
		t.Fatal(err)
	}
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

// newAttemptTestScheduler builds a scheduler over a fake API holding objs,
// with the pods also in its informer's store (as the informer would have
// them) and every object passed to the event handlers: scheduleOne can run
// attempts and write their outcome, with nothing running in the background.
func newAttemptTestScheduler(t *testing.T, objs ...*v1.Pod) (*Scheduler, *fake.Clientset) {
	t.Helper()
	cs := fake.NewSimpleClientset()
	factory := informers.NewSharedInformerFactory(cs, 0)
	s, err := New(cs, factory, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range objs {
		if _, err := cs.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := factory.Core().V1().Pods().Informer().GetIndexer().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return s, cs
}

// attempt runs one scheduling attempt and waits for its status write.
func attempt(t *testing.T, s *Scheduler, cs *fake.Clientset, name string) *v1.Pod {
	t.Helper()
	s.scheduleOne(context.Background())
	s.bindings.Wait()
	return getPodFrom(t, cs, name)
}

// TestNominationIsClearedWhenPreemptionCannotHelp: as kube-scheduler, a pod
// whose preemption finds no candidate any more loses its nominated node,
// in its status and in the room kept for it; so does one whose attempt
// fails for want of any node. One that may not preempt again yet (its
// victim is still terminating) keeps it.
func TestNominationIsClearedWhenPreemptionCannotHelp(t *testing.T) {
	node := schedtest.MakeNode().Name("n").Capacity("cpu", "2", "pods", "10").Obj()
	small := schedtest.MakePod().Name("small").UID("small").Req("cpu", "1").Obj()

	t.Run("no candidate", func(t *testing.T) {
		running := schedtest.MakePod().Name("low").UID("low").Node("n").Req("cpu", "1").Obj()
		big := schedtest.MakePod().Name("big").UID("big").Priority(1000).Req("cpu", "3").Obj()
		big.Status.NominatedNodeName = "n"
		s, cs := newAttemptTestScheduler(t, running, big)
		s.onNodeAdd(node)
		s.onPodAdd(running)
		s.onPodAdd(big)
		if got, want := tryPlace(t, s, small), "0/1 nodes are available: 1 Insufficient cpu."; got != want {
			t.Fatalf("before big's attempt, the room kept for it: got %q, want %q", got, want)
		}

		got := attempt(t, s, cs, "big")
		if got.Status.NominatedNodeName != "" {
			t.Errorf("nominatedNodeName = %q after preemption found no candidate, want it cleared", got.Status.NominatedNodeName)
		}
		if c := podScheduled(got); c == nil || !strings.Contains(c.Message, "preemption: 0/1 nodes are available: 1 Insufficient cpu.") {
			t.Errorf("PodScheduled = %+v, want preemption's verdict", c)
		}
		if n := s.nominator.NominatedPodsForNode("n"); len(n) != 0 {
			t.Errorf("still nominated to n: %v", n)
		}
		if got := tryPlace(t, s, small); got != "n" {
			t.Errorf("after big's attempt: got %q, want n (nothing is kept for big)", got)
		}
	})

	t.Run("no nodes", func(t *testing.T) {
		lost := schedtest.MakePod().Name("lost").UID("lost").Obj()
		lost.Status.NominatedNodeName = "gone"
		s, cs := newAttemptTestScheduler(t, lost)
		s.onPodAdd(lost)
		if got := attempt(t, s, cs, "lost"); got.Status.NominatedNodeName != "" {
			t.Errorf("nominatedNodeName = %q after an attempt with no nodes, want it cleared", got.Status.NominatedNodeName)
		}
		if n := s.nominator.NominatedPodsForNode("gone"); len(n) != 0 {
			t.Errorf("still nominated to gone: %v", n)
		}
	})

	t.Run("victim still terminating", func(t *testing.T) {
		victim := schedtest.MakePod().Name("victim").UID("victim").Node("n").Req("cpu", "2").Obj()
		victim.DeletionTimestamp = &metav1.Time{Time: metav1.Now().Time}
		victim.Status.Conditions = []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonPreemptionByScheduler}}
		waiting := schedtest.MakePod().Name("waiting").UID("waiting").Priority(1000).Req("cpu", "2").Obj()
		waiting.Status.NominatedNodeName = "n"
		s, cs := newAttemptTestScheduler(t, victim, waiting)
		s.onNodeAdd(node)
		s.onPodAdd(victim)
		s.onPodAdd(waiting)
		got := attempt(t, s, cs, "waiting")
		if got.Status.NominatedNodeName != "n" {
			t.Errorf("nominatedNodeName = %q while its victim terminates, want n kept", got.Status.NominatedNodeName)
		}
		if n := s.nominator.NominatedPodsForNode("n"); len(n) != 1 {
			t.Errorf("nominated to n: %v, want waiting", n)
		}
	})
}

func podScheduled(p *v1.Pod) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// TestPreemptionClearsLowerPriorityNominations: as kube-scheduler's
// prepareCandidate, a pod that preempts on a node clears the nominated node
// of the less important pods nominated there (their room is its now), and
// leaves the more important ones theirs.
func TestPreemptionClearsLowerPriorityNominations(t *testing.T) {
	node := schedtest.MakeNode().Name("n").Capacity("cpu", "4", "pods", "10").Obj()
	low := schedtest.MakePod().Name("low").UID("low").Node("n").Req("cpu", "4").Obj()
	mid := schedtest.MakePod().Name("mid").UID("mid").Priority(500).Req("cpu", "1").Obj()
	mid.Status.NominatedNodeName = "n"
	top := schedtest.MakePod().Name("top").UID("top").Priority(5000).Req("cpu", "1").Obj()
	top.Status.NominatedNodeName = "n"
	vip := schedtest.MakePod().Name("vip").UID("vip").Priority(1000).Req("cpu", "2").Obj()
	s, cs := newAttemptTestScheduler(t, low, mid, top, vip)
	s.onNodeAdd(node)
	s.onPodAdd(low)
	s.onPodAdd(mid)
	s.onPodAdd(vip)
	// top stays out of the queue: only vip is attempted.
	s.nominator.add(top, "")

	if got := attempt(t, s, cs, "vip"); got.Status.NominatedNodeName != "n" {
		t.Fatalf("vip nominated to %q, want n", got.Status.NominatedNodeName)
	}
	if got := getPodFrom(t, cs, "mid").Status.NominatedNodeName; got != "" {
		t.Errorf("mid (less important than vip) still nominated to %q, want it cleared", got)
	}
	if got := getPodFrom(t, cs, "top").Status.NominatedNodeName; got != "n" {
		t.Errorf("top (more important than vip) nominated to %q, want n kept", got)
	}
}

func getPodFrom(t *testing.T, cs *fake.Clientset, name string) *v1.Pod {
	t.Helper()
	p, err := cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPreemptionVictimsReachTheSchedulersMetrics: the victims DefaultPreemption
// counts land in the scheduler's own metrics (those the server serves), not
// in a set of the framework's.
func TestPreemptionVictimsReachTheSchedulersMetrics(t *testing.T) {
	node := schedtest.MakeNode().Name("n").Capacity("cpu", "1", "pods", "10").Obj()
	victim := schedtest.MakePod().Name("victim").UID("victim").Node("n").Req("cpu", "1").Obj()
	vip := schedtest.MakePod().Name("vip").UID("vip").Priority(1000).Req("cpu", "1").Obj()
	s, cs := newAttemptTestScheduler(t, victim, vip)
	s.onNodeAdd(node)
	s.onPodAdd(victim)
	s.onPodAdd(vip)
	if got := attempt(t, s, cs, "vip"); got.Status.NominatedNodeName != "n" {
		t.Fatalf("vip nominated to %q, want n", got.Status.NominatedNodeName)
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(s.metrics.Collectors()...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "scheduler_preemption_victims" {
			if h := f.GetMetric()[0].GetHistogram(); h.GetSampleCount() != 1 || h.GetSampleSum() != 1 {
				t.Errorf("scheduler_preemption_victims: %d observations summing to %v, want 1 of 1", h.GetSampleCount(), h.GetSampleSum())
			}
			return
		}
	}
	t.Fatal("scheduler_preemption_victims is not exported")
}

// TestPreemptionActsOnTheLatestPod: as kube-scheduler's preemption, which
// first reads the preemptor again from the informer, a pod deleted,
// replaced, bound or nominated while it was being scheduled is judged as it
// is now, not as the queue handed it over: no pod is evicted for a pod that
// is gone or placed, nor past the room kept for it. The nomination the scheduler made
// itself still counts before its status write comes back.
func TestPreemptionActsOnTheLatestPod(t *testing.T) {
	n1 := schedtest.MakeNode().Name("n1").Capacity("cpu", "1", "pods", "10").Obj()
	n2 := schedtest.MakeNode().Name("n2").Capacity("cpu", "1", "pods", "10").Obj()
	// going is the victim of vip's earlier preemption on n1, still terminating.
	going := schedtest.MakePod().Name("going").UID("going").Node("n1").Priority(500).Req("cpu", "1").Obj()
	going.DeletionTimestamp = &metav1.Time{Time: metav1.Now().Time}
	going.Status.Conditions = []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonPreemptionByScheduler}}
	vip := func(nominated string) *v1.Pod {
		p := schedtest.MakePod().Name("vip").UID("vip").Priority(1000).Req("cpu", "1").Obj()
		p.Status.NominatedNodeName = nominated
		return p
	}
	tests := []struct {
		name string
		// queued is vip as the queue hands it over, informed as the informer has it now (nil: gone).
		queued, informed *v1.Pod
	}{
		{name: "deleted", queued: vip("")},
		{name: "replaced by another of the same name", queued: vip(""), informed: func() *v1.Pod { p := vip(""); p.UID = "vip2"; return p }()},
		{name: "bound", queued: vip(""), informed: func() *v1.Pod { p := vip(""); p.Spec.NodeName = "elsewhere"; return p }()},
		{name: "nominated since", queued: vip(""), informed: vip("n1")},
		{name: "nominated by this scheduler, not yet written", queued: vip("n1"), informed: vip("")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			low := schedtest.MakePod().Name("low").UID("low").Node("n2").Req("cpu", "1").Obj()
			s, cs := newAttemptTestScheduler(t, going, low, tc.queued)
			s.onNodeAdd(n1)
			s.onNodeAdd(n2)
			s.onPodAdd(going)
			s.onPodAdd(low)
			s.onPodAdd(tc.queued)
			store := s.factory.Core().V1().Pods().Informer().GetIndexer()
			var err error
			if tc.informed == nil {
				err = store.Delete(tc.queued)
			} else {
				err = store.Update(tc.informed)
			}
			if err != nil {
				t.Fatal(err)
			}

			s.scheduleOne(context.Background())
			s.bindings.Wait()
			got, err := cs.CoreV1().Pods("default").Get(context.Background(), "low", metav1.GetOptions{})
			if err != nil || len(got.Status.Conditions) != 0 {
				t.Errorf("low was preempted (%v), want it left alone", err)
			}
		})
	}
}
