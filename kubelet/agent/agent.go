package agent

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	typedcoordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

// Client is what an agent uses of the API: core objects and Leases. A
// kubernetes.Interface is one; a hollow node passes just these two typed
// clients, which is much smaller than a whole clientset per node.
type Client interface {
	CoreV1() typedcorev1.CoreV1Interface
	CoordinationV1() typedcoordinationv1.CoordinationV1Interface
}

// Agent plays kubelet for one node.
type Agent struct {
	cfg     Config
	client  Client
	runtime Runtime
	node    *node
	// rro remembers recursiveReadOnly's answer once the runtime is there.
	rro atomic.Pointer[bool]

	queue   workqueue.TypedRateLimitingInterface[string]
	indexer cache.Store

	// admitMu makes admissions one at a time, each seeing those before.
	admitMu sync.Mutex
	// lastNode is the Node object last read or written (sawNode).
	lastNode atomic.Pointer[corev1.Node]
	mu       sync.Mutex
	ips      *podIPs
	hostIP   string
	tracked  map[string]*corev1.Pod // key → the last pod object seen, for cleanup after it is gone
	keys     map[types.UID]string   // the UIDs of tracked pods → their keys, for runtime change notices
	// evictions are the evictions asked of the pods' workers; failed
	// the pods failed by one or refused at admission, which the agent no
	// longer runs, with the Failed status it writes until written.
	evictions map[types.UID]*evictRequest
	failed    map[types.UID]*failure
	// finished are the terminal statuses of the pods that completed or
	// failed and whose sandbox the runtime stopped (SandboxStopper).
	finished map[types.UID]*corev1.PodStatus
	// overdue are the pods found past their active deadline, whose
	// Events are recorded (once, while their stop is retried).
	overdue map[types.UID]bool
	// stopping are the pods being deleted whose Killing Events are
	// recorded (once, while their stop, final status or removal is
	// retried).
	stopping map[types.UID]bool
	// stops are the stops under way (PodStopper), by pod.
	stops map[types.UID]*stopRun
	// started are the start times the agent gave the pods it runs, as
	// the kubelet's status manager keeps them: their active deadlines
	// count from these, which the cache may not show yet.
	started map[types.UID]*metav1.Time
	// sandboxBackOff spaces the tries at refused pods' sandboxes
	// (sandboxRefused).
	sandboxBackOff sandboxBackOff
	// refusedStops are the pods refused their sandbox whose stop has
	// begun (their Killing Events recorded), true once the runtime
	// stopped them: once per pod, not again at each retry of its sync
	// (stopRefused).
	refusedStops map[types.UID]bool
}

// resyncPeriod is how often a running pod is synced when nothing tells of a
// change: runtimes that report exits and probe verdicts (ChangeNotifier)
// make this the safety net for missed notices and the pace at which
// configMap and secret volumes follow their objects. The kubelet's
// --sync-frequency is a minute; ten seconds keeps volume updates prompt.
const resyncPeriod = 10 * time.Second

// New returns an agent for one node; Run starts it.
func New(client Client, rt Runtime, cfg Config) (*Agent, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if rt == nil {
		return nil, errors.New("agent: a Runtime is required")
	}
	a := &Agent{cfg: cfg, client: client, runtime: rt, node: &node{cfg: cfg, client: client, runtime: rt, poked: make(chan struct{}, 1)},
		queue:   workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "pods-" + cfg.NodeName}),
		tracked: map[string]*corev1.Pod{}, keys: map[types.UID]string{},
		evictions: map[types.UID]*evictRequest{}, failed: map[types.UID]*failure{}, finished: map[types.UID]*corev1.PodStatus{},
		overdue: map[types.UID]bool{}, stopping: map[types.UID]bool{}, stops: map[types.UID]*stopRun{}, started: map[types.UID]*metav1.Time{},
		refusedStops: map[types.UID]bool{}}
	for _, addr := range cfg.Addresses {
		if addr.Type == corev1.NodeInternalIP && a.hostIP == "" {
			a.hostIP = addr.Address
		}
	}
	return a, nil
}

// Name is the node's name.
func (a *Agent) Name() string { return a.cfg.NodeName }

// Run registers the node and serves its pods until ctx ends.
func (a *Agent) Run(ctx context.Context, workers int) error {
	return RunGroup(ctx, []*Agent{a}, workers)
}

// RunGroup runs several agents in one process, as hollow nodes do. Each is
// a kubelet of its own: it acts with its own client (with a node's
// credential, the node authorizer's rules apply to it) and watches only
// the pods bound to its node (fieldSelector spec.nodeName=<node>, the one
// pod watch that credential may open, which the API server indexes by
// node).
func RunGroup(ctx context.Context, agents []*Agent, workers int) error {
	var synced []cache.InformerSynced
	var informers []cache.Controller
	for _, a := range agents {
		selector := fields.OneTermEqualSelector("spec.nodeName", a.cfg.NodeName).String()
		pods := a.client.CoreV1().Pods(metav1.NamespaceAll)
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.FieldSelector = selector
				return pods.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.FieldSelector = selector
				return pods.Watch(ctx, o)
			},
		}
		enqueue := func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				a.queue.Add(key)
			}
		}
		// A plain informer: one consumer, so no shared processor and its
		// per-listener buffers (they add up over a thousand hollow nodes).
		indexer, informer := cache.NewInformerWithOptions(cache.InformerOptions{
			ListerWatcher: cache.ToListWatcherWithWatchListSemantics(lw, a.client), ObjectType: &corev1.Pod{},
			Handler: cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, n any) { a.podUpdated(n); enqueue(n) }, DeleteFunc: enqueue},
		})
		a.indexer = indexer
		informers = append(informers, informer)
		synced = append(synced, informer.HasSynced)
	}
	// Register every node before serving pods, so the scheduler sees them.
	errs := make(chan error, len(agents))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			registered, err := a.node.register(ctx)
			if err != nil {
				errs <- err
				return
			}
			a.sawNode(registered)
			go a.node.heartbeat(ctx, registered, a.sawNode)
			if d, ok := a.runtime.(*DeferredRuntime); ok {
				go a.openDeferred(ctx, d, registered, a.cfg.RuntimeRetry)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	// Graceful shutdown, from here on however early it comes: no new pods
	// for these nodes.
	defer func() {
		stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		for _, a := range agents {
			if err := a.node.cordon(stop); err != nil {
				a.cfg.Logger.Warn("marking node unschedulable at shutdown failed", "err", err)
			}
			if stop.Err() != nil {
				break // out of time: one warning, not one per remaining hollow node
			}
		}
	}()
	for _, inf := range informers {
		go inf.RunWithContext(ctx)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return ctx.Err()
	}
	for _, a := range agents {
		if n, ok := a.runtime.(ChangeNotifier); ok {
			n.OnPodChange(a.podChanged)
		}
		a.adoptExisting()
		for i := 0; i < max(workers, 1); i++ {
			go wait.UntilWithContext(ctx, a.worker, time.Second)
		}
		if a.cfg.Pressure != nil {
			go a.cfg.Pressure.Run(ctx, a, a.node.poke)
		}
	}
	<-ctx.Done()
	for _, a := range agents {
		a.queue.ShutDown()
	}
	return nil
}

// podChanged queues the pod a runtime says changed.
func (a *Agent) podChanged(uid types.UID) {
	a.mu.Lock()
	key, ok := a.keys[uid]
	a.mu.Unlock()
	if ok {
		a.queue.Add(key)
	}
}

func (a *Agent) setPodCIDR(n *corev1.Node) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ips != nil || n == nil || n.Spec.PodCIDR == "" {
		return
	}
	ips, err := newPodIPs(n.Spec.PodCIDR)
	if err != nil {
		a.cfg.Logger.Warn("node has an invalid pod CIDR", "err", err)
		return
	}
	a.ips = ips
}

// adoptExisting records the IPs of pods that already run here (after a
// restart), so new pods don't get them, and queues every pod.
//
// A finished pod's address was given back when it finished (or its
// eviction), and may since be a running pod's: running pods are adopted
// first, and a finished pod holds its address only if no running pod has
// it, until its first sync stops its sandbox (stopFinished). That sandbox
// may still hold the address in the runtime: the agent may have stopped
// between the pod's finish and its sandbox's stop, or an older agent left
// it, and a new pod given the address meanwhile could not start.
func (a *Agent) adoptExisting() {
	var finished []*corev1.Pod
	for _, obj := range a.indexer.List() {
		pod := obj.(*corev1.Pod)
		if pod.Spec.NodeName != a.cfg.NodeName {
			continue
		}
		if key, err := cache.MetaNamespaceKeyFunc(pod); err == nil {
			a.queue.Add(key)
		}
		if podFinished(pod) {
			finished = append(finished, pod)
			continue
		}
		a.adoptIP(pod)
	}
	for _, pod := range finished {
		a.adoptIP(pod)
	}
}

// adoptIP records the address the pod reports as its, unless another pod
// holds it already.
func (a *Agent) adoptIP(pod *corev1.Pod) {
	ip, err := netip.ParseAddr(pod.Status.PodIP)
	if err != nil || pod.Spec.HostNetwork {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ips != nil {
		a.ips.adopt(string(pod.UID), ip)
	}
}

// podFinished says whether the pod completed or failed (its phase is terminal).
func podFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

func (a *Agent) worker(ctx context.Context) {
	for {
		key, quit := a.queue.Get()
		if quit {
			return
		}
		retry, err := a.sync(ctx, key)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				a.cfg.Logger.Warn("pod sync failed", "pod", key, "err", err)
			}
			a.queue.AddRateLimited(key)
		case retry > 0:
			a.queue.Forget(key)
			a.queue.AddAfter(key, retry)
		default:
			a.queue.Forget(key)
		}
		a.queue.Done(key)
	}
}

// sync makes one pod right: start it, report its status, or stop it. It
// returns how soon to look again (0: on the next change).
func (a *Agent) sync(ctx context.Context, key string) (time.Duration, error) {
	obj, exists, err := a.indexer.GetByKey(key)
	if err != nil {
		return 0, err
	}
	var pod *corev1.Pod
	if exists {
		pod = obj.(*corev1.Pod)
		if pod.Spec.NodeName != a.cfg.NodeName {
			pod = nil
		}
	}
	a.mu.Lock()
	old := a.tracked[key]
	a.mu.Unlock()
	if old != nil && (pod == nil || pod.UID != old.UID) {
		// Gone (or replaced by a new pod of the same name): stop what ran,
		// as the kubelet stops a pod removed at once (a forced delete):
		// gracefully, with the grace period its last known state gives.
		if err := a.runtime.KillPod(ctx, old, terminationGrace(old)); err != nil {
			return 0, fmt.Errorf("stopping containers of %s: %w", key, err)
		}
		a.forget(key, old)
	}
	if pod == nil {
		return 0, nil
	}
	if req := a.takeEviction(pod.UID); req != nil {
		f, err := a.evict(ctx, pod, req.message)
		// The eviction is done once the containers are stopped, as the
		// kubelet's eviction manager waits only for the kill; the status
		// is written here, or at the next syncs until it is.
		req.done <- err
		if err != nil {
			return 0, err
		}
		return 0, a.writeFailure(ctx, pod, f)
	}
	a.mu.Lock()
	failed := a.failed[pod.UID]
	a.mu.Unlock()
	if failed != nil && pod.DeletionTimestamp == nil {
		// Evicted or refused: nothing runs any more; only its status
		// may be left to write (the last try failed).
		return 0, a.writeFailure(ctx, pod, failed)
	}
	if pod.DeletionTimestamp != nil {
		if err := a.terminate(ctx, key, pod); errors.Is(err, errGraceShortened) {
			return time.Millisecond, nil // at once, with the pod as it is now
		} else if err != nil {
			return 0, err
		}
		return 0, nil
	}
	if podFinished(pod) {
		return 0, a.stopFinished(ctx, key, pod)
	}
	a.mu.Lock()
	final := a.finished[pod.UID]
	a.mu.Unlock()
	if final != nil {
		// Finished, its sandbox stopped: only its terminal status may
		// be left to write (the last try failed, or the cache lags).
		return 0, a.writeStatus(ctx, key, pod, final)
	}
	if old == nil {
		if refused, err := a.admit(ctx, key, pod); refused || err != nil {
			return 0, err
		}
	}
	a.mu.Lock()
	a.tracked[key] = pod
	a.keys[pod.UID] = key
	a.mu.Unlock()
	if pastActiveDeadline(pod, a.startTime(pod), time.Now()) {
		return 0, a.failPastDeadline(ctx, key, pod)
	}
	// A pod the runtime cannot give the sandbox it asks for (a
	// RuntimeClass, a user namespace of its own) gets none, nor an
	// address.
	switch known, refusal := a.sandboxRefusal(pod); {
	case !known:
		return 2 * time.Second, nil // the runtime is not open yet
	case refusal != nil:
		return a.sandboxRefused(ctx, key, pod, refusal)
	}

	podIP, err := a.podIP(ctx, pod)
	if err != nil {
		return 0, err
	}
	if podIP == "" {
		return 2 * time.Second, nil // the node has no pod CIDR yet
	}
	state, err := a.runtime.SyncPod(ctx, pod, podIP)
	if err != nil {
		return 0, err
	}
	status := computeStatus(pod, state, podIP, a.hostIP, time.Now(), a.recursiveReadOnly())
	status.StartTime = a.keepStart(pod, status.StartTime)
	if a.cfg.Recorder != nil {
		recordTransitions(a.cfg.Recorder, pod, &pod.Status, status, state.Pulled)
	}
	if status.Phase == corev1.PodSucceeded || status.Phase == corev1.PodFailed {
		if err := a.stopSandbox(ctx, pod, status); err != nil {
			return 0, err
		}
		return 0, a.writeStatus(ctx, key, pod, status)
	}
	if err := a.writeStatus(ctx, key, pod, status); err != nil {
		return 0, err
	}
	retry := a.resyncAfter(pod, state)
	// Looked at again when its active deadline runs out, to be failed.
	if deadline, ok := activeDeadline(pod, status.StartTime); ok {
		if left := max(time.Until(deadline), time.Millisecond); retry == 0 || left < retry {
			retry = left
		}
	}
	return retry, nil
}

// resyncAfter says how soon a running pod is to be synced again when
// nothing happens to it (0: on the next change).
func (a *Agent) resyncAfter(pod *corev1.Pod, state PodState) time.Duration {
	if _, periodic := a.runtime.(interface{ NeedsResync() bool }); periodic {
		if state.RecheckAfter > 0 && state.RecheckAfter < resyncPeriod {
			return state.RecheckAfter
		}
		return resyncPeriod
	}
	// A runtime that knows when a pod's containers will change (the hollow
	// runtime's scripted exits) asks to be looked at again then.
	if r, ok := a.runtime.(interface {
		ResyncAfter(*corev1.Pod) time.Duration
	}); ok {
		return r.ResyncAfter(pod)
	}
	return 0
}

// writeStatus writes status as the pod's when it differs from the cached
// pod's. A pod gone meanwhile is no error.
func (a *Agent) writeStatus(ctx context.Context, key string, pod *corev1.Pod, status *corev1.PodStatus) error {
	if statusEqual(&pod.Status, status) {
		return nil
	}
	// A shallow copy with the new status: the request only encodes it, so
	// the cached pod's metadata and spec need no deep copy.
	upd := &corev1.Pod{TypeMeta: pod.TypeMeta, ObjectMeta: pod.ObjectMeta, Spec: pod.Spec, Status: *status}
	if _, err := a.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating status of %s: %w", key, err)
	}
	return nil
}

// stopSandbox releases what a pod that completed or failed holds besides
// its containers, when the runtime can (SandboxStopper), as the kubelet
// stops a finished pod's sandbox: its IP goes back to the node's pool for
// later pods, and status (the terminal one about to be written) reports
// PodReadyToStartContainers False. From then on the pod is not synced
// again; only status is written, until the pod is deleted.
func (a *Agent) stopSandbox(ctx context.Context, pod *corev1.Pod, status *corev1.PodStatus) error {
	// A DeferredRuntime is open by now: the pod was just synced.
	s, _ := a.sandboxStopper()
	if s == nil {
		return nil
	}
	if err := s.StopSandbox(ctx, pod); err != nil {
		return fmt.Errorf("stopping the sandbox of finished pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	setPodCondition(status, corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now()})
	a.sandboxStopped(pod, status)
	return nil
}

// stopFinished stops the sandbox of a pod found already finished — after an
// agent restart, whether it completed, failed or was evicted — as stopSandbox
// does at the finish (once per pod: again it is harmless but costs the
// runtime a look), and gives its address back. The pod is tracked from
// here on, so that its containers, kept stopped until then, go when it is
// deleted.
func (a *Agent) stopFinished(ctx context.Context, key string, pod *corev1.Pod) error {
	a.mu.Lock()
	a.tracked[key] = pod
	a.keys[pod.UID] = key
	done := a.finished[pod.UID] != nil
	a.mu.Unlock()
	if done {
		return nil
	}
	s, open := a.sandboxStopper()
	if !open {
		return nil // openDeferred syncs every pod again once the runtime is open
	}
	if s == nil {
		return nil // a runtime that cannot: the pod keeps its address until deleted
	}
	if err := s.StopSandbox(ctx, pod); err != nil {
		return fmt.Errorf("stopping the sandbox of finished pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	// The cached pod is not modified: its status can stand as the final one.
	a.sandboxStopped(pod, &pod.Status)
	return nil
}

// sandboxStopper is the runtime's SandboxStopper (nil if it is none),
// looking through a DeferredRuntime at the runtime it opened; open is false
// while that is not open yet and cannot say.
func (a *Agent) sandboxStopper() (s SandboxStopper, open bool) {
	rt := a.runtime
	if d, deferred := rt.(*DeferredRuntime); deferred {
		if rt = d.Opened(); rt == nil {
			return nil, false
		}
	}
	s, _ = rt.(SandboxStopper)
	return s, true
}

// sandboxStopped records the pod's sandbox stopped with its terminal status
// and gives its address back to the node's pool.
func (a *Agent) sandboxStopped(pod *corev1.Pod, status *corev1.PodStatus) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.finished[pod.UID] = status
	if a.ips != nil {
		a.ips.release(string(pod.UID))
	}
}

// terminate stops a pod being deleted, honouring its grace period, then
// removes it from the API (grace 0, only this incarnation).
// errGraceShortened ends a stop called off because the pod's deletion
// grace period was shortened: the next sync stops it again with the new one.
var errGraceShortened = errors.New("the deletion's grace period was shortened")

// stopRun is a stop under way: the grace period it was given, and how to
// call it off.
type stopRun struct {
	grace  time.Duration
	cancel context.CancelFunc
}

// podUpdated is told of each pod the watch shows changed, before its key is
// queued: a pod being stopped whose deletion grace period is now shorter
// than the stop's has that stop called off, to be started again with the
// shorter one, as the kubelet's pod worker restarts a termination whose
// grace period shrinks (a second delete with a smaller --grace-period). The
// sync under way holds the pod's key, so only this can reach it.
func (a *Agent) podUpdated(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.DeletionTimestamp == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if run := a.stops[pod.UID]; run != nil && terminationGrace(pod) < run.grace {
		run.cancel()
	}
}

// beginStop registers the stop of pod with grace, called off if the
// pod's grace period is shortened, also by an update the cache showed
// before the registration. end unregisters it.
func (a *Agent) beginStop(ctx context.Context, key string, pod *corev1.Pod, grace time.Duration) (sctx context.Context, end func()) {
	sctx, cancel := context.WithCancel(ctx)
	a.mu.Lock()
	a.stops[pod.UID] = &stopRun{grace: grace, cancel: cancel}
	a.mu.Unlock()
	if a.indexer != nil {
		if obj, ok, _ := a.indexer.GetByKey(key); ok {
			a.podUpdated(obj)
		}
	}
	return sctx, func() {
		a.mu.Lock()
		delete(a.stops, pod.UID)
		a.mu.Unlock()
		cancel()
	}
}

func (a *Agent) terminate(ctx context.Context, key string, pod *corev1.Pod) error {
	grace := terminationGrace(pod)
	a.mu.Lock()
	noticed := a.stopping[pod.UID]
	a.stopping[pod.UID] = true
	// Tracked also when first seen being deleted (an agent restart): if
	// it goes from the API before its stop is done, what is left of it
	// goes then, and nothing is kept of it.
	a.tracked[key] = pod
	a.mu.Unlock()
	if a.cfg.Recorder != nil && !noticed {
		recordKilling(a.cfg.Recorder, pod)
	}
	// As the kubelet: the containers stop, the pod's terminal status (phase and how each
	// container ended) is written, and only then does the pod go; with a finalizer (a Job's
	// tracking) it stays in that final state.
	var final *PodState
	if s, ok := a.runtime.(PodStopper); ok {
		sctx, end := a.beginStop(ctx, key, pod, grace)
		state, err := s.StopPod(sctx, pod, grace)
		shortened := sctx.Err() != nil && ctx.Err() == nil
		end()
		if shortened {
			return errGraceShortened
		}
		if err != nil {
			return fmt.Errorf("stopping containers of %s: %w", key, err)
		}
		final, grace = &state, 0
	}
	if final != nil {
		if err := a.writeTerminated(ctx, pod, final); err != nil {
			return err
		}
	}
	if err := a.runtime.KillPod(ctx, pod, grace); err != nil {
		return fmt.Errorf("stopping containers of %s: %w", key, err)
	}
	if final == nil {
		if err := a.writeTerminated(ctx, pod, nil); err != nil {
			return err
		}
	}
	uid := pod.UID
	err := a.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		// Still tracked: the next sync removes it, its Events not
		// recorded again.
		return fmt.Errorf("removing %s: %w", key, err)
	}
	a.forget(key, pod)
	return nil
}

// recordKilling records the kubelet's Killing Event of every container a
// pod being stopped has running: the app containers, then the init
// containers (sidecars, or one still initializing the pod), the last one
// first, the order in which sidecars stop.
func recordKilling(rec record.EventRecorder, pod *corev1.Pod) {
	killing := func(s *corev1.ContainerStatus) {
		if s.State.Running != nil {
			rec.Eventf(ContainerRef(pod, s.Name), corev1.EventTypeNormal, "Killing", "Stopping container %s", s.Name)
		}
	}
	for i := range pod.Status.ContainerStatuses {
		killing(&pod.Status.ContainerStatuses[i])
	}
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		if s := findStatus(pod.Status.InitContainerStatuses, pod.Spec.InitContainers[i].Name); s != nil {
			killing(s)
		}
	}
}

func (a *Agent) forget(key string, pod *corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t := a.tracked[key]; t != nil && t.UID == pod.UID {
		delete(a.tracked, key)
	}
	delete(a.keys, pod.UID)
	delete(a.failed, pod.UID)
	delete(a.finished, pod.UID)
	delete(a.overdue, pod.UID)
	delete(a.stopping, pod.UID)
	delete(a.refusedStops, pod.UID)
	delete(a.started, pod.UID)
	a.sandboxBackOff.forget(pod.UID)
	if a.ips != nil {
		a.ips.release(string(pod.UID))
	}
}

// podIP returns the pod's address: the node's for host-network pods, else one
// from the node's pod CIDR ("" while the node has none).
func (a *Agent) podIP(ctx context.Context, pod *corev1.Pod) (string, error) {
	if pod.Spec.HostNetwork {
		return a.hostIP, nil
	}
	a.mu.Lock()
	ips := a.ips
	a.mu.Unlock()
	if ips == nil {
		// From the API server's cache, as the kubelet reads its Node from
		// an informer: the CIDR was assigned well before, and a copy that
		// lacks it only means another try in a moment (a read from the
		// database costs the server many times more, once per node).
		n, err := a.client.CoreV1().Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{ResourceVersion: "0"})
		if err != nil {
			return "", err
		}
		a.sawNode(n)
		a.mu.Lock()
		ips = a.ips
		a.mu.Unlock()
		if ips == nil {
			return "", nil
		}
	}
	ip, err := ips.allocate(string(pod.UID))
	if err != nil {
		return "", err
	}
	return ip.String(), nil
}
