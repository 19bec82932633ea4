package scheduler

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// slowDeletes is client-go's fake clientset whose pod deletions each wait
// for a value on release (or for their context to end) before they go
// through. The wait is outside the fake's lock, which a blocking reactor
// would hold, stopping every other call of the scheduler too.
type slowDeletes struct {
	*fake.Clientset
	// started receives the name of each pod whose deletion begins waiting.
	started chan string
	release chan struct{}
	calls   atomic.Int32
}

func newSlowDeletes(objs ...runtime.Object) *slowDeletes {
	return &slowDeletes{Clientset: fake.NewSimpleClientset(objs...), started: make(chan string, 16), release: make(chan struct{})}
}

func (c *slowDeletes) CoreV1() corev1client.CoreV1Interface {
	return slowCore{c.Clientset.CoreV1(), c}
}

type slowCore struct {
	corev1client.CoreV1Interface
	c *slowDeletes
}

func (s slowCore) Pods(namespace string) corev1client.PodInterface {
	return slowPods{s.CoreV1Interface.Pods(namespace), s.c}
}

type slowPods struct {
	corev1client.PodInterface
	c *slowDeletes
}

func (p slowPods) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	p.c.calls.Add(1)
	p.c.started <- name
	select {
	case <-p.c.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return p.PodInterface.Delete(ctx, name, opts)
}

// newSlowDeleteScheduler is newAttemptTestScheduler over slowDeletes.
func newSlowDeleteScheduler(t *testing.T, cfg Config, objs ...*v1.Pod) (*Scheduler, *slowDeletes) {
	t.Helper()
	cs := newSlowDeletes()
	factory := informers.NewSharedInformerFactory(cs, 0)
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := New(cs, factory, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range objs {
		if _, err := cs.Clientset.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := factory.Core().V1().Pods().Informer().GetIndexer().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return s, cs
}

// waitUntil polls cond for up to 10 seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func gatedCount(s *Scheduler) int {
	_, _, _, g := s.queue.Lengths()
	return g
}

// TestPreemptorWaitsGatedWhileItsVictimsAreDeleted: as kube-scheduler v1.33
// with SchedulerAsyncPreemption, preemption nominates the preemptor at once
// and deletes its victims on a goroutine; until that is over the preemptor
// is kept out of the active queue (PreEnqueue refuses it, so an event that
// would retry it leaves it gated) while other pods are scheduled; once the
// victims are gone it is retried and placed where they were.
func TestPreemptorWaitsGatedWhileItsVictimsAreDeleted(t *testing.T) {
	n1 := schedtest.MakeNode().Name("n1").Capacity("cpu", "2", "pods", "10").Obj()
	n2 := schedtest.MakeNode().Name("n2").Capacity("cpu", "1", "pods", "10").Obj()
	victim := schedtest.MakePod().Name("victim").UID("victim").Node("n1").Req("cpu", "2").Obj()
	vip := schedtest.MakePod().Name("vip").UID("vip").Priority(1000).Req("cpu", "2").Obj()
	other := schedtest.MakePod().Name("other").UID("other").Req("cpu", "1").Obj()
	s, cs := newSlowDeleteScheduler(t, Config{}, victim, vip, other)
	s.onNodeAdd(n1)
	s.onNodeAdd(n2)
	s.onPodAdd(victim)
	s.onPodAdd(vip)
	s.onPodAdd(other)

	s.scheduleOne(context.Background()) // vip, the more important
	if got := <-cs.started; got != "victim" {
		t.Fatalf("deleting %q, want victim", got)
	}
	// The scheduling cycle is over, the victim not yet deleted.
	waitUntil(t, "vip's nomination written", func() bool {
		p, err := cs.Clientset.CoreV1().Pods("default").Get(context.Background(), "vip", metav1.GetOptions{})
		return err == nil && p.Status.NominatedNodeName == "n1"
	})
	if n := s.nominator.NominatedPodsForNode("n1"); len(n) != 1 || n[0].Pod.Name != "vip" {
		t.Errorf("nominated to n1: %v, want vip", n)
	}
	if st := s.fwk.RunPreEnqueuePlugins(context.Background(), vip); st.IsSuccess() {
		t.Errorf("PreEnqueue admits vip while its victims are being deleted")
	}
	// An event that retries every waiting pod leaves vip gated.
	s.queue.MoveAllToActiveOrBackoffQueue(nil)
	if g := gatedCount(s); g != 1 {
		t.Errorf("%d pods gated after an event, want vip", g)
	}

	// Other pods are scheduled meanwhile.
	s.scheduleOne(context.Background())
	if p, ok := s.cache.GetPod(other); !ok || p.Spec.NodeName != "n2" {
		t.Errorf("other not placed on n2 while vip waits (%v)", ok)
	}

	close(cs.release)
	s.bindings.Wait()
	if _, err := cs.Clientset.CoreV1().Pods("default").Get(context.Background(), "victim", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("victim still there (%v)", err)
	}
	if g := gatedCount(s); g != 0 {
		t.Errorf("%d pods still gated once the victims are deleted", g)
	}
	s.onPodDelete(victim)
	s.scheduleOne(context.Background())
	if p, ok := s.cache.GetPod(vip); !ok || p.Spec.NodeName != "n1" {
		t.Errorf("vip not placed on n1 once its victim is gone (%v)", ok)
	}
	s.bindings.Wait()
}

// TestFailedVictimDeletionRetriesThePreemptor: a victim the API refuses to
// delete ends the asynchronous preemption with an error; as kube-scheduler's
// prepareCandidateAsync (Handle.Activate), the preemptor, no longer held at
// PreEnqueue, goes back to the active queue to be retried at once rather
// than wait for an event that may never come. Its nomination stays, as
// upstream's.
func TestFailedVictimDeletionRetriesThePreemptor(t *testing.T) {
	node := schedtest.MakeNode().Name("n").Capacity("cpu", "1", "pods", "10").Obj()
	victim := schedtest.MakePod().Name("victim").UID("victim").Node("n").Req("cpu", "1").Obj()
	vip := schedtest.MakePod().Name("vip").UID("vip").Priority(1000).Req("cpu", "1").Obj()
	s, cs := newAttemptTestScheduler(t, victim, vip)
	cs.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is on fire")
	})
	s.onNodeAdd(node)
	s.onPodAdd(victim)
	s.onPodAdd(vip)

	got := attempt(t, s, cs, "vip")
	if got.Status.NominatedNodeName != "n" {
		t.Errorf("nominated to %q, want n", got.Status.NominatedNodeName)
	}
	// The condition was written before the deletion failed: it gives the
	// filters' reasons only, as kube-scheduler's (the error is logged).
	want := "0/1 nodes are available: 1 Insufficient cpu."
	if c := podScheduled(got); c == nil || c.Reason != v1.PodReasonUnschedulable || c.Message != want {
		t.Errorf("PodScheduled = %+v, want Unschedulable with message %q", c, want)
	}
	if st := s.fwk.RunPreEnqueuePlugins(context.Background(), vip); !st.IsSuccess() {
		t.Errorf("PreEnqueue still refuses vip after its preemption failed: %v", st)
	}
	if a, b, u, g := s.queue.Lengths(); a != 1 || b+u+g != 0 {
		t.Errorf("queue active/backoff/unschedulable/gated = %d/%d/%d/%d, want vip active", a, b, u, g)
	}
	if _, err := cs.CoreV1().Pods("default").Get(context.Background(), "victim", metav1.GetOptions{}); err != nil {
		t.Errorf("victim: %v, want it still there", err)
	}
}

// TestPreemptionStopsWithTheSchedulersContext: the goroutine deleting
// victims ends with the scheduler's context (a lost leadership term): it
// deletes no victim after that, and Run returns only once it is over, so
// that a former leader leaves nothing deleting pods behind.
func TestPreemptionStopsWithTheSchedulersContext(t *testing.T) {
	before := goleak.IgnoreCurrent()
	node := schedtest.MakeNode().Name("n").Capacity("cpu", "2", "pods", "10").Obj()
	a := schedtest.MakePod().Name("a").UID("a").Node("n").Req("cpu", "1").Obj()
	b := schedtest.MakePod().Name("b").UID("b").Node("n").Req("cpu", "1").Obj()
	vip := schedtest.MakePod().Name("vip").UID("vip").Priority(1000).Req("cpu", "2").Obj()
	cs := newSlowDeletes(node, a, b, vip)
	factory := informers.NewSharedInformerFactory(cs, 0)
	// One goroutine: the victims are deleted one after the other.
	s, err := New(cs, factory, Config{Parallelism: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case <-cs.started:
	case <-time.After(10 * time.Second):
		t.Fatal("no victim deletion began")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	factory.Shutdown()
	if n := cs.calls.Load(); n != 1 {
		t.Errorf("%d deletions begun, want 1: none after the scheduler stopped", n)
	}
	for _, name := range []string{"a", "b"} {
		if _, err := cs.Clientset.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("%s: %v, want it left alone", name, err)
		}
	}
	// Its victims not all deleted, the goroutine counts as one that failed,
	// in the scheduler's metrics (those the server serves).
	if got := preemptionGoroutines(t, s); len(got) != 1 || got["error"] != 1 {
		t.Errorf("scheduler_preemption_goroutines_execution_total by result: %v, want 1 error", got)
	}
	goleak.VerifyNone(t, before)
}

// preemptionGoroutines reads scheduler_preemption_goroutines_execution_total
// off the scheduler's metrics, by result.
func preemptionGoroutines(t *testing.T, s *Scheduler) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(s.metrics.Collectors()...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() == "scheduler_preemption_goroutines_execution_total" {
			for _, m := range f.GetMetric() {
				out[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// preemptingOverANomination is a scheduler about to attempt vip, which must
// preempt low from node n, where the less important mid waits nominated
// (out of the queue: only vip is attempted), with the pod patches going
// through react first.
func preemptingOverANomination(t *testing.T, react k8stesting.ReactionFunc) (*Scheduler, *fake.Clientset) {
	t.Helper()
	node := schedtest.MakeNode().Name("n").Capacity("cpu", "4", "pods", "10").Obj()
	low := schedtest.MakePod().Name("low").UID("low").Node("n").Req("cpu", "4").Obj()
	mid := schedtest.MakePod().Name("mid").UID("mid").Priority(500).Req("cpu", "1").Obj()
	mid.Status.NominatedNodeName = "n"
	vip := schedtest.MakePod().Name("vip").UID("vip").Priority(1000).Req("cpu", "2").Obj()
	s, cs := newAttemptTestScheduler(t, low, mid, vip)
	cs.PrependReactor("patch", "pods", react)
	s.onNodeAdd(node)
	s.onPodAdd(low)
	s.nominator.add(mid, "n")
	s.onPodAdd(vip)
	return s, cs
}

// TestUnclearedLowerNominationRetriesThePreemptor: as kube-scheduler v1.33's
// prepareCandidateAsync, a less important pod's nomination that cannot be
// cleared does not stop the preemption (the victims are deleted), but the
// goroutine ends in error: the preemptor goes back to the active queue
// (Handle.Activate) rather than wait among the unschedulable, and the
// goroutine is counted as one that failed.
func TestUnclearedLowerNominationRetriesThePreemptor(t *testing.T) {
	s, cs := preemptingOverANomination(t, func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" && a.(k8stesting.PatchAction).GetName() == "mid" {
			return true, nil, apierrors.NewServiceUnavailable("etcd is on fire")
		}
		return false, nil, nil
	})

	if got := attempt(t, s, cs, "vip"); got.Status.NominatedNodeName != "n" {
		t.Fatalf("vip nominated to %q, want n", got.Status.NominatedNodeName)
	}
	if _, err := cs.CoreV1().Pods("default").Get(context.Background(), "low", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("low: %v, want it deleted", err)
	}
	if got := getPodFrom(t, cs, "mid").Status.NominatedNodeName; got != "n" {
		t.Errorf("mid nominated to %q, want n (its patch was refused)", got)
	}
	if a, b, u, g := s.queue.Lengths(); a != 1 || b+u+g != 0 {
		t.Errorf("queue active/backoff/unschedulable/gated = %d/%d/%d/%d, want vip active", a, b, u, g)
	}
	if got := preemptionGoroutines(t, s); len(got) != 1 || got["error"] != 1 {
		t.Errorf("scheduler_preemption_goroutines_execution_total by result: %v, want 1 error", got)
	}
}

// TestStatusWritesGetThroughATransientError: as kube-scheduler's
// util.PatchPodStatus, the preemptor's own status write (its PodScheduled
// condition and nominated node) and the clearing of a less important pod's
// nomination are sent again when the API server fails them for a passing
// reason: one 503 each changes nothing of the outcome.
func TestStatusWritesGetThroughATransientError(t *testing.T) {
	var failed sync.Map
	s, cs := preemptingOverANomination(t, func(a k8stesting.Action) (bool, runtime.Object, error) {
		// The strategic-merge patches; the victim's DisruptionTarget
		// condition (an apply) is not retried, as upstream's.
		pa := a.(k8stesting.PatchAction)
		if pa.GetPatchType() != types.StrategicMergePatchType || a.GetSubresource() != "status" {
			return false, nil, nil
		}
		if _, again := failed.LoadOrStore(pa.GetName(), true); !again {
			return true, nil, apierrors.NewServiceUnavailable("the API server is restarting")
		}
		return false, nil, nil
	})

	got := attempt(t, s, cs, "vip")
	if got.Status.NominatedNodeName != "n" || !hasCondition(got, v1.PodScheduled, v1.ConditionFalse) {
		t.Fatalf("vip: nominated to %q, conditions %+v; want n and PodScheduled=False", got.Status.NominatedNodeName, got.Status.Conditions)
	}
	if got := getPodFrom(t, cs, "mid").Status.NominatedNodeName; got != "" {
		t.Errorf("mid nominated to %q, want its nomination cleared", got)
	}
	if got := preemptionGoroutines(t, s); len(got) != 1 || got["success"] != 1 {
		t.Errorf("scheduler_preemption_goroutines_execution_total by result: %v, want 1 success", got)
	}
}

func hasCondition(p *v1.Pod, typ v1.PodConditionType, status v1.ConditionStatus) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == typ && c.Status == status {
			return true
		}
	}
	return false
}

// TestPreemptorDeletedWhileItsVictimsAreDeleted: as kube-scheduler v1.33,
// whose goroutine does not look at the preemptor again, a preemptor deleted
// while its victims are being deleted does not stop the deletions; once they
// are over nothing of it is left: not in the queue (Ungate and Activate
// leave a pod the queue no longer holds alone), not in the room kept on the
// node, not held at PreEnqueue.
func TestPreemptorDeletedWhileItsVictimsAreDeleted(t *testing.T) {
	node := schedtest.MakeNode().Name("n").Capacity("cpu", "2", "pods", "10").Obj()
	victim := schedtest.MakePod().Name("victim").UID("victim").Node("n").Req("cpu", "2").Obj()
	vip := schedtest.MakePod().Name("vip").UID("vip").Priority(1000).Req("cpu", "2").Obj()
	s, cs := newSlowDeleteScheduler(t, Config{}, victim, vip)
	s.onNodeAdd(node)
	s.onPodAdd(victim)
	s.onPodAdd(vip)

	s.scheduleOne(context.Background())
	if got := <-cs.started; got != "victim" {
		t.Fatalf("deleting %q, want victim", got)
	}
	waitUntil(t, "vip's attempt over", func() bool {
		a, b, u, g := s.queue.Lengths()
		return a+b+u+g == 1
	})
	if err := cs.Clientset.CoreV1().Pods("default").Delete(context.Background(), "vip", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.onPodDelete(vip)
	close(cs.release)
	s.bindings.Wait()

	if _, err := cs.Clientset.CoreV1().Pods("default").Get(context.Background(), "victim", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("victim: %v, want it deleted all the same", err)
	}
	if a, b, u, g := s.queue.Lengths(); a+b+u+g != 0 {
		t.Errorf("queue active/backoff/unschedulable/gated = %d/%d/%d/%d, want empty", a, b, u, g)
	}
	if n := s.nominator.NominatedPodsForNode("n"); len(n) != 0 {
		t.Errorf("nominated to n: %v, want nothing", n)
	}
	if st := s.fwk.RunPreEnqueuePlugins(context.Background(), vip); !st.IsSuccess() {
		t.Errorf("PreEnqueue still holds vip once its preemption is over: %v", st)
	}
	if got := preemptionGoroutines(t, s); len(got) != 1 || got["success"] != 1 {
		t.Errorf("scheduler_preemption_goroutines_execution_total by result: %v, want 1 success", got)
	}
}
