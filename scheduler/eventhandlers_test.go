package scheduler

import (
	"context"
	"io"
	"log/slog"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/skiffkube/skiff/scheduler/plugins/interpodaffinity"
	"github.com/skiffkube/skiff/scheduler/plugins/nodeports"
	"github.com/skiffkube/skiff/scheduler/plugins/noderesourcesfit"
	"github.com/skiffkube/skiff/scheduler/plugins/podtopologyspread"
	"github.com/skiffkube/skiff/scheduler/queue"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// newHandlerTestScheduler builds a scheduler whose event handlers and queue
// the test drives by hand (nothing runs).
func newHandlerTestScheduler(t *testing.T) *Scheduler {
	t.Helper()
	cs := fake.NewSimpleClientset()
	s, err := New(cs, informers.NewSharedInformerFactory(cs, 0), Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// parkUnschedulable pops pod and returns it to the queue as rejected by
// plugins, with no cluster event during the attempt: it waits among the
// unschedulable.
func parkUnschedulable(t *testing.T, s *Scheduler, pod *v1.Pod, plugins ...string) *queue.QueuedPodInfo {
	t.Helper()
	s.queue.Add(pod)
	qp, err := s.queue.Pop(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	qp.UnschedulablePlugins = sets.New(plugins...)
	s.queue.AddUnschedulableIfNotPresent(qp)
	if _, _, u, _ := s.queue.Lengths(); u != 1 {
		t.Fatalf("%s not parked among the unschedulable", pod.Name)
	}
	return qp
}

func requeued(s *Scheduler) bool {
	a, b, u, _ := s.queue.Lengths()
	return u == 0 && a+b == 1
}

// TestAssignedPodRelabelWakesPodsItsLabelsBlocked: a running pod whose labels
// change may stop matching a pending pod's anti-affinity (or start matching
// its affinity), as kube-scheduler's assigned-pod label update event.
func TestAssignedPodRelabelWakesPodsItsLabelsBlocked(t *testing.T) {
	s := newHandlerTestScheduler(t)
	web := schedtest.MakePod().Name("web").UID("web").Label("app", "web").Node("n1").Obj()
	s.onPodAdd(web)
	parkUnschedulable(t, s, schedtest.MakePod().Name("p").UID("p").PodAntiAffinity("kubernetes.io/hostname", "app", "web").Obj(), interpodaffinity.Name)

	// A change that is not a label leaves it waiting.
	annotated := web.DeepCopy()
	annotated.ResourceVersion = "2"
	annotated.Annotations = map[string]string{"note": "x"}
	s.onPodUpdate(web, annotated)
	if requeued(s) {
		t.Fatal("an annotation change of a placed pod requeued the pending pod")
	}

	relabelled := annotated.DeepCopy()
	relabelled.ResourceVersion = "3"
	relabelled.Labels = map[string]string{"app": "old-web"}
	s.onPodUpdate(annotated, relabelled)
	if !requeued(s) {
		t.Fatal("relabelling the placed pod left the pod its anti-affinity rejected among the unschedulable")
	}
}

// TestAssignedPodScaleDownWakesPodsThatDidNotFit: a placed pod resized in
// place to request less leaves room on its node, as kube-scheduler's
// UpdatePodScaleDown event.
func TestAssignedPodScaleDownWakesPodsThatDidNotFit(t *testing.T) {
	s := newHandlerTestScheduler(t)
	big := schedtest.MakePod().Name("big").UID("big").Req("cpu", "2").Node("n1").Obj()
	s.onPodAdd(big)
	parkUnschedulable(t, s, schedtest.MakePod().Name("p").UID("p").Req("cpu", "1").Obj(), noderesourcesfit.Name)

	grown := big.DeepCopy()
	grown.ResourceVersion = "2"
	grown.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("1Gi")
	s.onPodUpdate(big, grown)
	if requeued(s) {
		t.Fatal("a placed pod asking for more requeued the pod that did not fit")
	}

	shrunk := grown.DeepCopy()
	shrunk.ResourceVersion = "3"
	shrunk.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("1")
	s.onPodUpdate(grown, shrunk)
	if !requeued(s) {
		t.Fatal("a placed pod resized down left the pod that did not fit among the unschedulable")
	}
}

// TestNodeDeleteWakesPodsSpreadingRejected: with a node gone, its (empty)
// topology domain no longer holds the minimum down, so a pod
// PodTopologySpread rejected may fit; a pod that lacked room does not.
func TestNodeDeleteWakesPodsSpreadingRejected(t *testing.T) {
	s := newHandlerTestScheduler(t)
	node := schedtest.MakeNode().Name("n2").Label("topology.kubernetes.io/zone", "b").Obj()
	s.onNodeAdd(node)
	parkUnschedulable(t, s, schedtest.MakePod().Name("p").UID("p").Obj(), noderesourcesfit.Name)
	s.onNodeDelete(node)
	if requeued(s) {
		t.Fatal("a node deletion requeued a pod that lacked room")
	}
	s.queue.Delete(schedtest.MakePod().Name("p").Obj())

	s.onNodeAdd(node)
	parkUnschedulable(t, s, schedtest.MakePod().Name("spread").UID("spread").
		SpreadConstraint(1, "topology.kubernetes.io/zone", v1.DoNotSchedule, "app", "web").Obj(), podtopologyspread.Name)
	s.onNodeDelete(cache.DeletedFinalStateUnknown{Key: "n2", Obj: node})
	if !requeued(s) {
		t.Fatal("a node deletion left the pod PodTopologySpread rejected among the unschedulable")
	}
}

// TestEveryAttemptLetsGoOfItsPod: an attempt that ends without handing the
// pod back (here: the pod was gone from the informer when it failed) lets
// go of it, so the queue does not keep swallowing the pod's updates as if
// it were still being scheduled.
func TestEveryAttemptLetsGoOfItsPod(t *testing.T) {
	s := newHandlerTestScheduler(t)
	pod := schedtest.MakePod().Name("p").UID("p").Obj()
	pod.ResourceVersion = "1"
	s.queue.Add(pod)
	s.scheduleOne(context.Background()) // no nodes, and not in the lister: dropped
	if s.queue.Has(pod) {
		t.Fatal("a pod the informer no longer knew was requeued")
	}
	updated := pod.DeepCopy()
	updated.ResourceVersion = "2"
	updated.Labels = map[string]string{"x": "y"}
	s.onPodUpdate(pod, updated)
	if a, _, _, _ := s.queue.Lengths(); a != 1 {
		t.Fatal("the pod's update after its attempt ended was swallowed")
	}
	s.bindings.Wait()
}

// TestEventDuringAnAttemptIsJudgedByTheHintsOfItsRejectors: a node that
// joins while a pod is being scheduled is judged when the attempt fails, by
// the hints of the plugins that rejected it: too small, the pod waits; big
// enough, it is retried.
func TestEventDuringAnAttemptIsJudgedByTheHintsOfItsRejectors(t *testing.T) {
	for _, c := range []struct {
		cpu     string
		retried bool
	}{{"1", false}, {"4", true}} {
		s := newHandlerTestScheduler(t)
		s.queue.Add(schedtest.MakePod().Name("p").UID("p").Req("cpu", "2").Obj())
		qp, err := s.queue.Pop(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		s.onNodeAdd(schedtest.MakeNode().Name("n-"+c.cpu).Capacity("cpu", c.cpu).Obj())
		qp.UnschedulablePlugins = sets.New(noderesourcesfit.Name)
		s.queue.AddUnschedulableIfNotPresent(qp)
		if _, _, u, _ := s.queue.Lengths(); (u == 0) != c.retried {
			t.Errorf("node of %s cpu during the attempt: retried = %v, want %v", c.cpu, u == 0, c.retried)
		}
	}
}

// parkAll pops each pod and returns it to the queue as rejected by plugin,
// so that all wait among the unschedulable.
func parkAll(t *testing.T, s *Scheduler, plugin string, pods ...*v1.Pod) {
	t.Helper()
	for _, p := range pods {
		s.queue.Add(p)
	}
	for range pods {
		qp, err := s.queue.Pop(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		qp.UnschedulablePlugins = sets.New(plugin)
		s.queue.AddUnschedulableIfNotPresent(qp)
	}
	if _, _, u, _ := s.queue.Lengths(); u != len(pods) {
		t.Fatalf("%d pods parked among the unschedulable, want %d", u, len(pods))
	}
}

// TestDeletedNominatedPodWakesTheLowerPrioritiesItHeldBack: a pending pod
// nominated to a node holds room there against pods of lower or equal
// priority; when it is deleted, kube-scheduler (deletePodFromSchedulingQueue)
// tells those pods, and only those, of an assigned-pod deletion. A pending
// pod without a nomination held nothing, and its deletion wakes nobody.
func TestDeletedNominatedPodWakesTheLowerPrioritiesItHeldBack(t *testing.T) {
	s := newHandlerTestScheduler(t)
	wants80 := func(name string, prio int32) *v1.Pod {
		return schedtest.MakePod().Name(name).UID(name).Priority(prio).HostPort(v1.ProtocolTCP, "", 80).Obj()
	}
	low, equal, high := wants80("low", 1), wants80("equal", 10), wants80("high", 100)
	parkAll(t, s, nodeports.Name, low, equal, high)

	plain := wants80("plain", 10)
	s.onPodAdd(plain)
	s.onPodDelete(plain)
	if a, b, u, _ := s.queue.Lengths(); a+b != 0 || u != 3 {
		t.Fatalf("deleting a pod without a nomination requeued %d pods", a+b)
	}

	nominated := wants80("nominated", 10)
	nominated.Status.NominatedNodeName = "n1"
	s.onPodAdd(nominated)
	s.onPodDelete(cache.DeletedFinalStateUnknown{Key: "default/nominated", Obj: nominated})
	if a, b, u, _ := s.queue.Lengths(); a+b != 2 || u != 1 {
		t.Fatalf("after the nominated pod's deletion: %d requeued, %d waiting; want 2 and 1", a+b, u)
	}
	s.queue.Delete(high)
	if _, _, u, _ := s.queue.Lengths(); u != 0 {
		t.Fatal("the higher-priority pod was requeued, a lower one left waiting")
	}
}

// TestChangedNominationWakesTheLowerPrioritiesItHeldBack: a pending pod
// whose nomination is cleared or moves no longer holds room on the old
// node, as kube-scheduler's updatePodInSchedulingQueue tells pods of lower
// or equal priority. An update that keeps the nomination wakes nobody.
func TestChangedNominationWakesTheLowerPrioritiesItHeldBack(t *testing.T) {
	s := newHandlerTestScheduler(t)
	wants80 := func(name string, prio int32) *v1.Pod {
		return schedtest.MakePod().Name(name).UID(name).Priority(prio).HostPort(v1.ProtocolTCP, "", 80).Obj()
	}
	low, high := wants80("low", 1), wants80("high", 100)
	nominated := wants80("nominated", 10)
	nominated.ResourceVersion = "1"
	nominated.Status.NominatedNodeName = "n1"
	s.onPodAdd(nominated)
	if _, err := s.queue.Pop(context.Background()); err != nil {
		t.Fatal(err)
	}
	parkAll(t, s, nodeports.Name, low, high)

	relabelled := nominated.DeepCopy()
	relabelled.ResourceVersion = "2"
	relabelled.Labels = map[string]string{"x": "y"}
	s.onPodUpdate(nominated, relabelled)
	if _, _, u, _ := s.queue.Lengths(); u != 2 {
		t.Fatal("an update keeping the nomination requeued a pod")
	}

	cleared := relabelled.DeepCopy()
	cleared.ResourceVersion = "3"
	cleared.Status.NominatedNodeName = ""
	s.onPodUpdate(relabelled, cleared)
	if _, _, u, _ := s.queue.Lengths(); u != 1 {
		t.Fatalf("after the nomination was cleared %d pods wait, want 1 (high)", u)
	}
	s.queue.Delete(high)
	if _, _, u, _ := s.queue.Lengths(); u != 0 {
		t.Fatal("the higher-priority pod was requeued, the lower one left waiting")
	}
}
