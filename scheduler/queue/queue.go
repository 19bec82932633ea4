package queue

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/plugins/queuesort"
)

// Defaults, as in kube-scheduler.
const (
	DefaultInitialBackoff = 1 * time.Second
	DefaultMaxBackoff     = 10 * time.Second
	// DefaultMaxInUnschedulable is how long a pod may wait for an event before
	// it is retried anyway.
	DefaultMaxInUnschedulable = 5 * time.Minute
	backoffFlushPeriod        = 1 * time.Second
	unschedulableFlushPeriod  = 30 * time.Second
)

// ErrClosed is returned by Pop once the queue is closed.
var ErrClosed = errors.New("scheduling queue is closed")

// QueuedPodInfo is a pod in the queue with its scheduling history.
type QueuedPodInfo struct {
	*framework.PodInfo
	key string
	// Timestamp is when the pod last entered the queue (orders equal priorities
	// and starts the backoff).
	Timestamp time.Time
	// InitialAttemptTimestamp is when the pod was first popped.
	InitialAttemptTimestamp time.Time
	// Attempts counts scheduling attempts so far.
	Attempts int
	// UnschedulablePlugins names the plugins that rejected the last attempt;
	// cluster events only wake pods that one of these plugins might now accept.
	UnschedulablePlugins sets.Set[string]
}

// Key is namespace/name.
func (q *QueuedPodInfo) Key() string { return q.key }

// Options tune the queue; zero values take the defaults.
type Options struct {
	InitialBackoff     time.Duration
	MaxBackoff         time.Duration
	MaxInUnschedulable time.Duration
	// PreEnqueue, if set, says whether a pod may be queued for attempts at
	// all (the framework's PreEnqueue plugins: scheduling gates, a
	// preemption still deleting the pod's victims). It is asked whenever a
	// pod would enter activeQ or backoffQ from elsewhere; a pod it refuses
	// waits among the gated until an update of the pod, Activate or Ungate
	// lets it in.
	PreEnqueue func(*v1.Pod) bool
	// Less orders the active queue (and pods whose backoff ends in the
	// same window): the profile's queue sort plugin. nil means PrioritySort's
	// order, the higher priority first, then the pod queued earlier.
	Less framework.QueueSortLess
	// Now is the clock (tests).
	Now func() time.Time
}

// PriorityQueue is the scheduling queue. It is safe for concurrent use.
type PriorityQueue struct {
	opts Options

	mu            sync.Mutex
	cond          *sync.Cond
	activeQ       *keyedHeap
	backoffQ      *backoffQueue
	unschedulable map[string]*QueuedPodInfo
	// gated holds pods PreEnqueue refused; no cluster event or timer moves
	// them, only an update of the pod itself, Activate or Ungate.
	gated map[string]*QueuedPodInfo
	// inFlight holds the pods popped and not yet handed back (by
	// AddUnschedulableIfNotPresent) or let go (by Done), with what happened
	// to them meanwhile, as kube-scheduler's inFlightPods.
	inFlight map[string]*inFlightPod
	closed   bool
}

// inFlightPod is what the queue learnt of a pod during its attempt.
type inFlightPod struct {
	pod *v1.Pod
	// updated: an update that may change the verdict arrived.
	updated bool
	// deleted: the pod was deleted; it must not come back.
	deleted bool
	// events are the relevance tests of the cluster events that arrived
	// during the attempt, judged when it fails: only then are the plugins
	// that rejected the pod known. Each pod keeps its own list, freed with
	// the record: the scheduler has one pod in flight at a time (scheduleOne
	// hands it back before popping the next), so sharing one list between
	// pods would save nothing.
	events []func(*QueuedPodInfo) bool
	// eventForAll: an event relevant to every pod arrived, so the pod will
	// be retried whatever rejected it and events need not be kept.
	eventForAll bool
	// activated: Activate was called for the pod; it goes back to activeQ.
	activated bool
}

// recordEvent notes a cluster event (relevant nil: one for every pod).
func (f *inFlightPod) recordEvent(relevant func(*QueuedPodInfo) bool) {
	switch {
	case f.eventForAll:
	case relevant == nil:
		f.eventForAll, f.events = true, nil
	default:
		f.events = append(f.events, relevant)
	}
}

// anEventMayHelp reports whether an event of the attempt concerns a plugin
// that rejected p.
func (f *inFlightPod) anEventMayHelp(p *QueuedPodInfo) bool {
	return f.eventForAll || slices.ContainsFunc(f.events, func(relevant func(*QueuedPodInfo) bool) bool { return relevant(p) })
}

// Key returns the queue key of pod.
func Key(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

// New returns an empty queue.
func New(opts Options) *PriorityQueue {
	if opts.InitialBackoff <= 0 {
		opts.InitialBackoff = DefaultInitialBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.MaxInUnschedulable <= 0 {
		opts.MaxInUnschedulable = DefaultMaxInUnschedulable
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	q := &PriorityQueue{opts: opts, unschedulable: map[string]*QueuedPodInfo{}, gated: map[string]*QueuedPodInfo{},
		inFlight: map[string]*inFlightPod{}}
	q.cond = sync.NewCond(&q.mu)
	less := opts.Less
	if less == nil {
		less = (&queuesort.PrioritySort{}).Less
	}
	activeLess := func(a, b *QueuedPodInfo) bool { return less(a.Pod, a.Timestamp, b.Pod, b.Timestamp) }
	q.activeQ = newKeyedHeap(activeLess)
	q.backoffQ = newBackoffQueue(q.backoffExpiry, activeLess)
	return q
}

// backoffDuration doubles from InitialBackoff per attempt, capped at MaxBackoff.
func (q *PriorityQueue) backoffDuration(p *QueuedPodInfo) time.Duration {
	d := q.opts.InitialBackoff
	for i := 1; i < p.Attempts; i++ {
		if d >= q.opts.MaxBackoff/2 {
			return q.opts.MaxBackoff
		}
		d *= 2
	}
	return min(d, q.opts.MaxBackoff)
}

// backoffExpiry is when p's backoff ends, truncated to its backoffWindow.
func (q *PriorityQueue) backoffExpiry(p *QueuedPodInfo) time.Time {
	return p.Timestamp.Add(q.backoffDuration(p)).Truncate(backoffWindow)
}

// isBackingOff: a pod waits until the window its backoff ends in is over,
// so that a whole window leaves backoffQ at once, in activeQ's order.
func (q *PriorityQueue) isBackingOff(p *QueuedPodInfo) bool {
	return p.Attempts > 0 && !q.backoffExpiry(p).Before(q.opts.Now().Truncate(backoffWindow))
}

func (q *PriorityQueue) newQueued(pod *v1.Pod) *QueuedPodInfo {
	now := q.opts.Now()
	return &QueuedPodInfo{PodInfo: framework.NewPodInfo(pod), key: Key(pod), Timestamp: now}
}

// admits runs PreEnqueue.
func (q *PriorityQueue) admits(pod *v1.Pod) bool {
	return q.opts.PreEnqueue == nil || q.opts.PreEnqueue(pod)
}

// gate moves p (wherever it was) among the gated.
func (q *PriorityQueue) gate(p *QueuedPodInfo) {
	q.activeQ.Delete(p.key)
	q.backoffQ.Delete(p.key)
	delete(q.unschedulable, p.key)
	q.gated[p.key] = p
}

// Add queues a new pending pod in activeQ, or among the gated; it reports
// whether the pod went to activeQ.
func (q *PriorityQueue) Add(pod *v1.Pod) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := q.newQueued(pod)
	if !q.admits(pod) {
		q.gate(p)
		return false
	}
	delete(q.gated, p.key)
	delete(q.unschedulable, p.key)
	q.backoffQ.Delete(p.key)
	q.activeQ.AddOrUpdate(p)
	q.cond.Broadcast()
	return true
}

// Update replaces a queued pod. A pod waiting in unschedulable whose spec or
// labels changed may fit now, so it is moved back (to backoffQ if its backoff
// is still running).
func (q *PriorityQueue) Update(oldPod, newPod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := Key(newPod)
	if f, ok := q.inFlight[key]; ok && f.pod.UID == newPod.UID {
		// Being scheduled: queueing it now would schedule it twice and lose
		// its backoff. Remember the update; AddUnschedulableIfNotPresent
		// retries the pod after its backoff if the attempt fails.
		if isPodUpdated(f.pod, newPod) {
			f.updated = true
		}
		f.pod = newPod
		return
	}
	if p, ok := q.gated[key]; ok {
		p.PodInfo = framework.NewPodInfo(newPod)
		if q.admits(newPod) {
			// Its gates are gone: it is a new arrival for the active queue.
			delete(q.gated, key)
			p.Timestamp = q.opts.Now()
			q.activeQ.AddOrUpdate(p)
			q.cond.Broadcast()
		}
		return
	}
	if p, ok := q.unschedulable[key]; ok {
		// PreEnqueue is asked only if the pod is to move: a status write
		// (the scheduler's own, recording the failure) leaves it waiting
		// for its event, whatever PreEnqueue says meanwhile.
		p.PodInfo = framework.NewPodInfo(newPod)
		if oldPod != nil && isPodUpdated(oldPod, newPod) {
			delete(q.unschedulable, key)
			q.requeue(p)
		}
		return
	}
	if !q.admits(newPod) {
		p := q.newQueued(newPod)
		if old, ok := q.activeQ.Get(key); ok {
			p = old
		} else if old, ok := q.backoffQ.Get(key); ok {
			p = old
		}
		p.PodInfo = framework.NewPodInfo(newPod)
		q.gate(p)
		return
	}
	if p, ok := q.activeQ.Get(key); ok {
		p.PodInfo = framework.NewPodInfo(newPod)
		q.activeQ.AddOrUpdate(p)
		return
	}
	if p, ok := q.backoffQ.Get(key); ok {
		p.PodInfo = framework.NewPodInfo(newPod)
		q.backoffQ.AddOrUpdate(p)
		return
	}
	p := q.newQueued(newPod)
	q.activeQ.AddOrUpdate(p)
	q.cond.Broadcast()
}

// isPodUpdated ignores changes the scheduler itself makes (status,
// resourceVersion, managed fields) so that recording a failure doesn't wake
// the pod it was recorded on.
func isPodUpdated(oldPod, newPod *v1.Pod) bool {
	strip := func(p *v1.Pod) *v1.Pod {
		c := p.DeepCopy()
		c.ResourceVersion = ""
		c.Generation = 0
		c.ManagedFields = nil
		c.Status = v1.PodStatus{}
		return c
	}
	return !equality.Semantic.DeepEqual(strip(oldPod), strip(newPod))
}

// Delete removes pod from the queue.
func (q *PriorityQueue) Delete(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := Key(pod)
	q.activeQ.Delete(key)
	q.backoffQ.Delete(key)
	delete(q.unschedulable, key)
	delete(q.gated, key)
	if f, ok := q.inFlight[key]; ok && f.pod.UID == pod.UID {
		f.deleted = true
	}
}

// Pop blocks until a pod is in activeQ, the queue closes, or ctx is done.
func (q *PriorityQueue) Pop(ctx context.Context) (*QueuedPodInfo, error) {
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.cond.Broadcast()
		q.mu.Unlock()
	})
	defer stop()
	q.mu.Lock()
	defer q.mu.Unlock()
	// With activeQ empty, a pod a plugin rejected is tried before its
	// backoff ends rather than leave the scheduler idle, as kube-scheduler
	// v1.33 does (SchedulerPopFromBackoffQ); pods that failed with an error
	// still wait theirs out.
	for q.activeQ.Len() == 0 && q.backoffQ.rejected.Len() == 0 {
		if q.closed {
			return nil, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		q.cond.Wait()
	}
	p := q.activeQ.Pop()
	if p == nil {
		p = q.backoffQ.rejected.Pop()
	}
	q.inFlight[p.key] = &inFlightPod{pod: p.Pod}
	p.Attempts++
	if p.InitialAttemptTimestamp.IsZero() {
		p.InitialAttemptTimestamp = q.opts.Now()
	}
	return p, nil
}

// Done lets go of a popped pod that is not coming back to the queue (it was
// assumed, or skipped); AddUnschedulableIfNotPresent does it for the rest.
func (q *PriorityQueue) Done(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if f, ok := q.inFlight[Key(pod)]; ok && f.pod.UID == pod.UID {
		delete(q.inFlight, Key(pod))
	}
}

// AddUnschedulableIfNotPresent returns a popped pod whose attempt failed.
// If an update of the pod, or a cluster event that may help one of the
// plugins that rejected it, arrived during the attempt, the pod goes to
// backoffQ; otherwise it waits in unschedulable for such an event. A pod
// deleted during the attempt is dropped.
func (q *PriorityQueue) AddUnschedulableIfNotPresent(p *QueuedPodInfo) {
	q.mu.Lock()
	defer q.mu.Unlock()
	f, inFlight := q.inFlight[p.key]
	inFlight = inFlight && f.pod.UID == p.Pod.UID
	if inFlight {
		delete(q.inFlight, p.key)
		if f.deleted {
			return
		}
	}
	if _, ok := q.activeQ.Get(p.key); ok {
		return
	}
	if _, ok := q.backoffQ.Get(p.key); ok {
		return
	}
	if _, ok := q.unschedulable[p.key]; ok {
		return
	}
	if _, ok := q.gated[p.key]; ok {
		return
	}
	p.Timestamp = q.opts.Now()
	// Retry after backoff if the failure was an error rather than a verdict
	// on the cluster, or if the pod or the cluster changed in a way that may
	// reverse the verdict while it was being made. A pod the queue did not
	// see popped (its bind failed after Done) has no record of what happened
	// meanwhile: retry it too, as kube-scheduler does.
	switch {
	case inFlight && f.activated:
		q.activate(p)
	case failedWithError(p) || !inFlight || f.updated || f.anEventMayHelp(p):
		if !q.admits(p.Pod) {
			q.gate(p)
			return
		}
		q.toBackoff(p)
	default:
		q.unschedulable[p.key] = p
	}
}

// requeue moves p, taken out of where it waited, towards activeQ: to
// backoffQ while its backoff runs, to activeQ otherwise, or among the gated
// if PreEnqueue refuses it now.
func (q *PriorityQueue) requeue(p *QueuedPodInfo) {
	switch {
	case !q.admits(p.Pod):
		q.gate(p)
	case q.isBackingOff(p):
		q.toBackoff(p)
	default:
		q.activeQ.AddOrUpdate(p)
		q.cond.Broadcast()
	}
}

// activate puts p, out of every sub-queue, in activeQ, or among the gated
// if PreEnqueue refuses it.
func (q *PriorityQueue) activate(p *QueuedPodInfo) {
	if !q.admits(p.Pod) {
		q.gate(p)
		return
	}
	q.activeQ.AddOrUpdate(p)
	q.cond.Broadcast()
}

// Activate retries pod at once, as kube-scheduler's Activate: from
// unschedulable, backoffQ or the gated (if PreEnqueue now admits it) it goes
// to activeQ, backoff or not; a pod being scheduled goes there when its
// attempt fails. A pod the queue does not hold is left alone. A plugin
// calls it when the pod's failure was its own doing and no cluster event
// will report its end (a preemption that could not delete its victims).
func (q *PriorityQueue) Activate(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := Key(pod)
	if f, ok := q.inFlight[key]; ok && f.pod.UID == pod.UID {
		f.activated = true
		return
	}
	p, ok := q.backoffQ.Get(key)
	if !ok {
		if p, ok = q.unschedulable[key]; !ok {
			if p, ok = q.gated[key]; !ok {
				return
			}
		}
	}
	if p.Pod.UID != pod.UID {
		return
	}
	q.backoffQ.Delete(key)
	delete(q.unschedulable, key)
	delete(q.gated, key)
	q.activate(p)
}

// Ungate asks PreEnqueue again about pod if it waits among the gated, and
// moves it on towards activeQ if admitted (to backoffQ while its backoff
// runs). A plugin whose PreEnqueue verdict changed without the pod changing
// calls it (a preemption done deleting the pod's victims): a pod gated on
// its way back from unschedulable was retried for an event, which must not
// be lost; one still waiting among the unschedulable is left to wait for
// its event.
func (q *PriorityQueue) Ungate(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := Key(pod)
	p, ok := q.gated[key]
	if !ok || p.Pod.UID != pod.UID || !q.admits(p.Pod) {
		return
	}
	delete(q.gated, key)
	q.requeue(p)
}

// toBackoff puts p in backoffQ, waking a Pop that waits on an empty
// activeQ if it may take p early.
func (q *PriorityQueue) toBackoff(p *QueuedPodInfo) {
	q.backoffQ.AddOrUpdate(p)
	if !failedWithError(p) {
		q.cond.Broadcast()
	}
}

// MoveAllToActiveOrBackoffQueue wakes unschedulable pods for a cluster event.
// relevant, if not nil, selects the pods the event may help (by the plugins
// that rejected them); nil wakes all. Pods being scheduled keep the event
// for the end of their attempt, when it is known whether it concerns them.
func (q *PriorityQueue) MoveAllToActiveOrBackoffQueue(relevant func(*QueuedPodInfo) bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, f := range q.inFlight {
		f.recordEvent(relevant)
	}
	q.moveUnschedulable(relevant)
}

// moveUnschedulable moves the unschedulable pods relevant selects (all if
// nil) to activeQ, or to backoffQ while their backoff runs, or among the
// gated if PreEnqueue refuses them now.
func (q *PriorityQueue) moveUnschedulable(relevant func(*QueuedPodInfo) bool) {
	for key, p := range q.unschedulable {
		if relevant != nil && !relevant(p) {
			continue
		}
		delete(q.unschedulable, key)
		q.requeue(p)
	}
}

// flushBackoffCompleted moves pods whose backoff ended to activeQ.
func (q *PriorityQueue) flushBackoffCompleted() {
	q.mu.Lock()
	defer q.mu.Unlock()
	done := q.backoffQ.popCompleted(q.isBackingOff)
	for _, p := range done {
		q.activeQ.AddOrUpdate(p)
	}
	if len(done) > 0 {
		q.cond.Broadcast()
	}
}

// flushUnschedulableLeftover retries pods that waited longer than
// MaxInUnschedulable. It is no cluster event: pods in flight are not told.
func (q *PriorityQueue) flushUnschedulableLeftover() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.opts.Now()
	q.moveUnschedulable(func(p *QueuedPodInfo) bool {
		return now.Sub(p.Timestamp) > q.opts.MaxInUnschedulable
	})
}

// Run flushes backoffQ every second and the unschedulable leftovers every
// 30 seconds until ctx is done, then closes the queue.
func (q *PriorityQueue) Run(ctx context.Context) {
	backoff := time.NewTicker(backoffFlushPeriod)
	leftover := time.NewTicker(unschedulableFlushPeriod)
	defer backoff.Stop()
	defer leftover.Stop()
	for {
		select {
		case <-ctx.Done():
			q.Close()
			return
		case <-backoff.C:
			q.flushBackoffCompleted()
		case <-leftover.C:
			q.flushUnschedulableLeftover()
		}
	}
}

// Close wakes every Pop with ErrClosed.
func (q *PriorityQueue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}

// Lengths reports the size of each sub-queue under one lock, so the four
// add up to the queue's size at one moment; gated pods wait for PreEnqueue
// to admit them.
func (q *PriorityQueue) Lengths() (active, backoff, unschedulable, gated int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.activeQ.Len(), q.backoffQ.Len(), len(q.unschedulable), len(q.gated)
}

// Has reports whether pod is anywhere in the queue.
func (q *PriorityQueue) Has(pod *v1.Pod) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := Key(pod)
	_, a := q.activeQ.Get(key)
	_, b := q.backoffQ.Get(key)
	_, u := q.unschedulable[key]
	_, g := q.gated[key]
	return a || b || u || g
}
