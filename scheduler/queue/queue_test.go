package queue

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/skiffkube/skiff/scheduler/schedtest"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newQueue() (*PriorityQueue, *clock) {
	c := &clock{t: time.Unix(1000, 0)}
	return New(Options{Now: c.now}), c
}

func pod(name string, prio int32) *v1.Pod {
	return schedtest.MakePod().Name(name).Priority(prio).Obj()
}

func pop(t *testing.T, q *PriorityQueue) *QueuedPodInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	p, err := q.Pop(ctx)
	if err != nil {
		t.Fatalf("Pop: %v", err)
	}
	return p
}

func TestActiveQueueOrdersByPriorityThenAge(t *testing.T) {
	q, c := newQueue()
	q.Add(pod("low-old", 1))
	c.advance(time.Second)
	q.Add(pod("high", 10))
	c.advance(time.Second)
	q.Add(pod("low-new", 1))
	for _, want := range []string{"high", "low-old", "low-new"} {
		if got := pop(t, q).Pod.Name; got != want {
			t.Fatalf("popped %s, want %s", got, want)
		}
	}
}

// The profile's queue sort plugin (Options.Less) orders the active queue,
// not the priorities.
func TestActiveQueueOrdersByLess(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	byName := func(a *v1.Pod, _ time.Time, b *v1.Pod, _ time.Time) bool { return a.Name < b.Name }
	q := New(Options{Now: c.now, Less: byName})
	q.Add(pod("c", 100))
	c.advance(time.Second)
	q.Add(pod("a", 1))
	c.advance(time.Second)
	q.Add(pod("b", 10))
	for _, want := range []string{"a", "b", "c"} {
		if got := pop(t, q).Pod.Name; got != want {
			t.Fatalf("popped %s, want %s", got, want)
		}
	}
}

func TestBackoffDoublesFromOneSecondToTenSeconds(t *testing.T) {
	q, _ := newQueue()
	for attempts, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 9: 10 * time.Second} {
		if got := q.backoffDuration(&QueuedPodInfo{Attempts: attempts}); got != want {
			t.Errorf("attempt %d: backoff %v, want %v", attempts, got, want)
		}
	}
}

func TestUnschedulablePodWaitsForAClusterEventThenItsBackoff(t *testing.T) {
	q, c := newQueue()
	q.Add(pod("p", 0))
	p := pop(t, q)
	p.UnschedulablePlugins = sets.New("NodeResourcesFit")
	q.AddUnschedulableIfNotPresent(p)
	if a, b, u, _ := q.Lengths(); a != 0 || b != 0 || u != 1 {
		t.Fatalf("lengths = %d/%d/%d, want the pod unschedulable", a, b, u)
	}
	// An event that doesn't concern its plugin leaves it alone.
	q.MoveAllToActiveOrBackoffQueue(func(p *QueuedPodInfo) bool { return p.UnschedulablePlugins.Has("InterPodAffinity") })
	if _, _, u, _ := q.Lengths(); u != 1 {
		t.Fatal("unrelated event moved the pod")
	}
	// A relevant event within the backoff moves it to backoffQ...
	q.MoveAllToActiveOrBackoffQueue(nil)
	if _, b, _, _ := q.Lengths(); b != 1 {
		t.Fatal("pod should be backing off")
	}
	// ...and once the one-second window its backoff ends in is over, the
	// flush makes it active.
	c.advance(1900 * time.Millisecond)
	q.flushBackoffCompleted()
	if a, _, _, _ := q.Lengths(); a != 0 {
		t.Fatal("pod left backoffQ before the window its backoff ends in was over")
	}
	c.advance(100 * time.Millisecond)
	q.flushBackoffCompleted()
	if a, _, _, _ := q.Lengths(); a != 1 {
		t.Fatal("pod should be active after its backoff")
	}
}

// TestAnIdleSchedulerTakesRejectedPodsFromBackoff: with activeQ empty, Pop
// takes the pod backoffQ would release first (the earliest window, then
// priority) instead of waiting out its backoff; a pod that failed with an
// error is never taken early. As kube-scheduler v1.33's
// SchedulerPopFromBackoffQ.
func TestAnIdleSchedulerTakesRejectedPodsFromBackoff(t *testing.T) {
	q, c := newQueue()
	for _, p := range []*v1.Pod{pod("errored", 100), pod("low", 1), pod("high", 10), pod("later", 50)} {
		q.Add(p)
	}
	var popped []*QueuedPodInfo
	for range 4 {
		popped = append(popped, pop(t, q))
	}
	q.MoveAllToActiveOrBackoffQueue(nil) // an event raced with every attempt
	// Popped by priority: errored, later, high, low. "later" fails a second
	// after the others, so its backoff ends in the next window.
	slices.SortStableFunc(popped, func(a, b *QueuedPodInfo) int {
		return cmp.Compare(boolInt(a.Pod.Name == "later"), boolInt(b.Pod.Name == "later"))
	})
	for _, p := range popped {
		if p.Pod.Name != "errored" {
			p.UnschedulablePlugins = sets.New("NodeResourcesFit")
		}
		if p.Pod.Name == "later" {
			c.advance(time.Second)
		}
		q.AddUnschedulableIfNotPresent(p)
	}
	if a, b, _, _ := q.Lengths(); a != 0 || b != 4 {
		t.Fatalf("active %d backoff %d, want all four backing off", a, b)
	}
	for _, want := range []string{"high", "low", "later"} {
		if got := pop(t, q); got.Pod.Name != want {
			t.Fatalf("popped %s, want %s", got.Pod.Name, want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if p, err := q.Pop(ctx); err == nil {
		t.Fatalf("popped %s, which failed with an error, before its backoff", p.Pod.Name)
	}
}

// TestAWaitingPopWakesForARejectedPodEnteringBackoff: a Pop blocked on an
// empty queue is woken by a cluster event that sends a pod to backoffQ.
func TestAWaitingPopWakesForARejectedPodEnteringBackoff(t *testing.T) {
	q, _ := newQueue()
	q.Add(pod("p", 0))
	p := pop(t, q)
	p.UnschedulablePlugins = sets.New("NodeResourcesFit")
	q.AddUnschedulableIfNotPresent(p)
	got := make(chan *QueuedPodInfo, 1)
	// The deadline only keeps a failure from hanging the test.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		p, err := q.Pop(ctx)
		if err == nil {
			got <- p
		}
		close(got)
	}()
	q.MoveAllToActiveOrBackoffQueue(nil)
	if p, ok := <-got; !ok || p.Pod.Name != "p" {
		t.Fatal("the waiting Pop did not take the pod the event moved to backoffQ")
	}
	q.Close()
}

func TestLeftoverUnschedulablePodsAreFlushedAfterFiveMinutes(t *testing.T) {
	q, c := newQueue()
	q.Add(pod("p", 0))
	p := pop(t, q)
	p.UnschedulablePlugins = sets.New("NodeAffinity")
	q.AddUnschedulableIfNotPresent(p)
	c.advance(4 * time.Minute)
	q.flushUnschedulableLeftover()
	if _, _, u, _ := q.Lengths(); u != 1 {
		t.Fatal("flushed too early")
	}
	c.advance(2 * time.Minute)
	q.flushUnschedulableLeftover()
	if a, _, u, _ := q.Lengths(); a != 1 || u != 0 {
		t.Fatal("pod not flushed after five minutes")
	}
}

func TestUpdatingAnUnschedulablePodsSpecRequeuesIt(t *testing.T) {
	q, c := newQueue()
	old := pod("p", 0)
	q.Add(old)
	p := pop(t, q)
	p.UnschedulablePlugins = sets.New("NodeAffinity")
	q.AddUnschedulableIfNotPresent(p)
	c.advance(2 * time.Second)
	statusOnly := old.DeepCopy()
	statusOnly.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
	q.Update(old, statusOnly)
	if _, _, u, _ := q.Lengths(); u != 1 {
		t.Fatal("a status-only update (our own failure record) must not requeue")
	}
	relabelled := statusOnly.DeepCopy()
	relabelled.Labels = map[string]string{"fixed": "yes"}
	q.Update(statusOnly, relabelled)
	if a, _, _, _ := q.Lengths(); a != 1 {
		t.Fatal("a spec/label change should make the pod active")
	}
	if got := pop(t, q).Pod.Labels["fixed"]; got != "yes" {
		t.Fatal("queue kept the old pod")
	}
}

func TestPopUnblocksOnClose(t *testing.T) {
	q, _ := newQueue()
	errc := make(chan error, 1)
	go func() { _, err := q.Pop(context.Background()); errc <- err }()
	time.Sleep(20 * time.Millisecond)
	q.Close()
	select {
	case err := <-errc:
		if err != ErrClosed {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(time.Second):
		t.Fatal("Pop did not return after Close")
	}
}

// TestGatedPodsWaitForAnUpdate: a pod PreEnqueue refuses is never popped,
// cluster events and the leftover flush leave it be, and the update that
// makes PreEnqueue admit it queues it.
func TestGatedPodsWaitForAnUpdate(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	q := New(Options{Now: c.now, PreEnqueue: func(p *v1.Pod) bool { return len(p.Spec.SchedulingGates) == 0 }})
	gated := pod("gated", 10)
	gated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "ready"}}
	q.Add(gated)
	q.Add(pod("plain", 1))
	if got := pop(t, q).Pod.Name; got != "plain" {
		t.Fatalf("popped %s, want plain (the gated pod has the higher priority but waits)", got)
	}
	q.MoveAllToActiveOrBackoffQueue(nil)
	c.advance(time.Hour)
	q.flushUnschedulableLeftover()
	q.flushBackoffCompleted()
	if a, b, u, g := q.Lengths(); a != 0 || b != 0 || u != 0 || g != 1 || !q.Has(gated) {
		t.Fatalf("after events and flushes: active %d backoff %d unschedulable %d gated %d", a, b, u, g)
	}
	// Another update that keeps a gate keeps it waiting.
	relabelled := gated.DeepCopy()
	relabelled.Labels = map[string]string{"x": "y"}
	q.Update(gated, relabelled)
	if gatedLen(q) != 1 {
		t.Fatalf("an update keeping the gate let the pod in")
	}
	open := relabelled.DeepCopy()
	open.Spec.SchedulingGates = nil
	q.Update(relabelled, open)
	if got := pop(t, q); got.Pod.Name != "gated" || len(got.Pod.Spec.SchedulingGates) != 0 || gatedLen(q) != 0 {
		t.Fatalf("after the gates went: popped %s, %d gated", got.Pod.Name, gatedLen(q))
	}
	// A deleted gated pod leaves no trace.
	q.Add(gated)
	q.Delete(gated)
	if gatedLen(q) != 0 || q.Has(gated) {
		t.Fatalf("a deleted gated pod is still queued")
	}
}

func gatedLen(q *PriorityQueue) int {
	_, _, _, g := q.Lengths()
	return g
}

// TestAnUpdateDuringTheAttemptIsKeptForItsEnd: an update of a pod being
// scheduled does not queue a second copy (which would be tried at once,
// with its backoff forgotten); if the attempt fails the pod is retried
// after its backoff rather than left waiting for a cluster event, as
// kube-scheduler records events for in-flight pods.
func TestAnUpdateDuringTheAttemptIsKeptForItsEnd(t *testing.T) {
	q, c := newQueue()
	old := pod("p", 0)
	old.UID = "uid-p"
	q.Add(old)
	p := pop(t, q)
	relabelled := old.DeepCopy()
	relabelled.Labels = map[string]string{"fixed": "yes"}
	q.Update(old, relabelled)
	if a, b, u, _ := q.Lengths(); a+b+u != 0 {
		t.Fatalf("an update mid-attempt queued a second copy: active %d backoff %d unschedulable %d", a, b, u)
	}
	p.UnschedulablePlugins = sets.New("NodeAffinity")
	q.AddUnschedulableIfNotPresent(p)
	if _, b, u, _ := q.Lengths(); b != 1 || u != 0 {
		t.Fatalf("backoff=%d unschedulable=%d, want the updated pod retried after its backoff", b, u)
	}
	c.advance(time.Second)
	q.flushBackoffCompleted()
	if got := pop(t, q); got.Attempts != 2 {
		t.Fatalf("attempts = %d, want 2: the update must not reset the pod's history", got.Attempts)
	}
}

// TestOurOwnStatusWriteDuringTheAttemptChangesNothing: a status-only update
// (the previous attempt's PodScheduled=False landing late) is no reason to
// retry.
func TestOurOwnStatusWriteDuringTheAttemptChangesNothing(t *testing.T) {
	q, _ := newQueue()
	old := pod("p", 0)
	q.Add(old)
	p := pop(t, q)
	status := old.DeepCopy()
	status.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
	q.Update(old, status)
	p.UnschedulablePlugins = sets.New("NodeAffinity")
	q.AddUnschedulableIfNotPresent(p)
	if a, b, u, _ := q.Lengths(); a != 0 || b != 0 || u != 1 {
		t.Fatalf("active %d backoff %d unschedulable %d, want the pod waiting for an event", a, b, u)
	}
}

// TestAPodDeletedDuringTheAttemptIsNotRequeued: the deletion arrives after
// the failed attempt looked the pod up but before it is handed back.
func TestAPodDeletedDuringTheAttemptIsNotRequeued(t *testing.T) {
	q, _ := newQueue()
	gone := pod("p", 0)
	q.Add(gone)
	p := pop(t, q)
	q.Delete(gone)
	p.UnschedulablePlugins = sets.New("NodeAffinity")
	q.AddUnschedulableIfNotPresent(p)
	if q.Has(gone) {
		t.Fatal("a pod deleted during its attempt came back to the queue")
	}
	// Once let go, the pod's next update queues it as usual.
	q.Add(gone)
	p = pop(t, q)
	q.Done(p.Pod)
	updated := gone.DeepCopy()
	updated.Labels = map[string]string{"x": "y"}
	q.Update(gone, updated)
	if a, _, _, _ := q.Lengths(); a != 1 {
		t.Fatal("an update after Done did not queue the pod")
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rejectedBy selects pods one of plugins rejected, as the scheduler's event
// handlers do.
func rejectedBy(plugins ...string) func(*QueuedPodInfo) bool {
	return func(p *QueuedPodInfo) bool { return p.UnschedulablePlugins.HasAny(plugins...) }
}

// TestOnlyAnEventThatMayHelpThePodDuringItsAttemptSendsItToBackoff: a pod
// NodeResourcesFit rejected is retried early only for an event during its
// attempt that concerns NodeResourcesFit, as kube-scheduler v1.33 asks the
// rejecting plugins about the events an in-flight pod missed.
func TestOnlyAnEventThatMayHelpThePodDuringItsAttemptSendsItToBackoff(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before        []func(*QueuedPodInfo) bool
		during        []func(*QueuedPodInfo) bool
		leftoverFlush bool
		wantBackoff   bool
	}{
		{name: "no event", wantBackoff: false},
		{name: "an event for other plugins", during: []func(*QueuedPodInfo) bool{rejectedBy("InterPodAffinity")}, wantBackoff: false},
		{name: "an event for the rejecting plugin", during: []func(*QueuedPodInfo) bool{rejectedBy("InterPodAffinity"), rejectedBy("NodeResourcesFit")}, wantBackoff: true},
		{name: "an event for every pod", during: []func(*QueuedPodInfo) bool{nil}, wantBackoff: true},
		{name: "an event for every pod before the pop", before: []func(*QueuedPodInfo) bool{nil}, wantBackoff: false},
		{name: "the leftover flush", leftoverFlush: true, wantBackoff: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := newQueue()
			q.Add(pod("p", 0))
			for _, e := range tc.before {
				q.MoveAllToActiveOrBackoffQueue(e)
			}
			p := pop(t, q)
			for _, e := range tc.during {
				q.MoveAllToActiveOrBackoffQueue(e)
			}
			if tc.leftoverFlush {
				q.flushUnschedulableLeftover()
			}
			p.UnschedulablePlugins = sets.New("NodeResourcesFit")
			q.AddUnschedulableIfNotPresent(p)
			_, b, u, _ := q.Lengths()
			if gotBackoff := b == 1 && u == 0; gotBackoff != tc.wantBackoff || b+u != 1 {
				t.Fatalf("backoff=%d unschedulable=%d, want backoff %v", b, u, tc.wantBackoff)
			}
		})
	}
}

// TestEachPodInFlightCountsTheEventsOfItsOwnAttempt: with two pods in
// flight, an event before the second was popped counts for the first only,
// and one after both were popped for both.
func TestEachPodInFlightCountsTheEventsOfItsOwnAttempt(t *testing.T) {
	q, _ := newQueue()
	q.Add(pod("first", 10))
	q.Add(pod("second", 0))
	first := pop(t, q)
	q.MoveAllToActiveOrBackoffQueue(rejectedBy("NodeAffinity"))
	second := pop(t, q)
	q.MoveAllToActiveOrBackoffQueue(rejectedBy("TaintToleration"))

	first.UnschedulablePlugins = sets.New("NodeAffinity")
	q.AddUnschedulableIfNotPresent(first)
	second.UnschedulablePlugins = sets.New("NodeAffinity")
	q.AddUnschedulableIfNotPresent(second)
	if len(q.inFlight) != 0 {
		t.Fatalf("%d in-flight records kept after both attempts ended", len(q.inFlight))
	}
	if !inBackoff(q, first) || inBackoff(q, second) {
		t.Fatalf("first in backoff %v, second %v: want only first (the NodeAffinity event came before second's pop)", inBackoff(q, first), inBackoff(q, second))
	}
}

// TestAPodHandedBackAfterDoneIsRetriedAfterItsBackoff: the queue knows
// nothing of what happened during an attempt it no longer tracks (the pod
// was assumed, let go, and its bind failed), so it retries the pod rather
// than wait for an event that may have come and gone.
func TestAPodHandedBackAfterDoneIsRetriedAfterItsBackoff(t *testing.T) {
	q, _ := newQueue()
	q.Add(pod("p", 0))
	p := pop(t, q)
	q.Done(p.Pod)
	p.UnschedulablePlugins = sets.New("NodeResourcesFit")
	q.AddUnschedulableIfNotPresent(p)
	if !inBackoff(q, p) {
		t.Fatal("a pod handed back after Done waits for a cluster event")
	}
}

func inBackoff(q *PriorityQueue, p *QueuedPodInfo) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.backoffQ.Get(p.key)
	return ok
}

// TestPreEnqueueIsAskedWheneverAPodWouldBeRetried: a PreEnqueue verdict may
// change without the pod changing (preemption deleting its victims holds it),
// so a pod coming back from unschedulable, or returned from an attempt to be
// retried, is asked again and waits among the gated if refused; a status
// write leaves a waiting pod where it is. Ungate lets a gated pod go on
// once admitted, and Activate sends a pod to activeQ from wherever it waits,
// or once its attempt ends.
func TestPreEnqueueIsAskedWheneverAPodWouldBeRetried(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	held := map[string]bool{}
	q := New(Options{Now: c.now, PreEnqueue: func(p *v1.Pod) bool { return !held[p.Name] }})
	park := func(p *v1.Pod) *QueuedPodInfo {
		t.Helper()
		q.Add(p)
		qp := pop(t, q)
		qp.UnschedulablePlugins = sets.New("NodeResourcesFit")
		q.AddUnschedulableIfNotPresent(qp)
		return qp
	}
	a := pod("a", 0)
	park(a)
	held["a"] = true
	written := a.DeepCopy()
	written.Status.NominatedNodeName = "n"
	q.Update(a, written)
	if _, _, u, g := q.Lengths(); u != 1 || g != 0 {
		t.Fatalf("a status write moved a held pod: unschedulable %d gated %d", u, g)
	}
	q.MoveAllToActiveOrBackoffQueue(nil)
	if act, b, u, g := q.Lengths(); act+b+u != 0 || g != 1 {
		t.Fatalf("an event retried a held pod: active %d backoff %d unschedulable %d gated %d", act, b, u, g)
	}
	q.Ungate(a)
	if gatedLen(q) != 1 {
		t.Fatalf("Ungate let in a pod PreEnqueue still refuses")
	}
	held["a"] = false
	q.Ungate(a)
	c.advance(time.Hour)
	if got := pop(t, q).Pod.Name; got != "a" || gatedLen(q) != 0 {
		t.Fatalf("popped %s after Ungate, want a", got)
	}

	// Activate: from unschedulable straight to activeQ, backoff or not.
	b := pod("b", 0)
	park(b)
	q.Activate(b)
	if act, _, u, _ := q.Lengths(); act != 1 || u != 0 {
		t.Fatalf("Activate left b: active %d unschedulable %d", act, u)
	}
	// ... and a pod being scheduled once its attempt ends.
	qp := pop(t, q)
	q.Activate(b)
	qp.UnschedulablePlugins = sets.New("NodeResourcesFit")
	q.AddUnschedulableIfNotPresent(qp)
	if act, _, u, _ := q.Lengths(); act != 1 || u != 0 {
		t.Fatalf("Activate during the attempt left b: active %d unschedulable %d", act, u)
	}
	// Returned from an attempt with an event to retry it, a held pod is gated.
	qp = pop(t, q)
	held["b"] = true
	q.MoveAllToActiveOrBackoffQueue(nil)
	q.AddUnschedulableIfNotPresent(qp)
	if act, bo, u, g := q.Lengths(); act+bo+u != 0 || g != 1 {
		t.Fatalf("a held pod retried after its attempt: active %d backoff %d unschedulable %d gated %d", act, bo, u, g)
	}
}
