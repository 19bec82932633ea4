package nodelifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coordinformers "k8s.io/client-go/informers/coordination/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/skiffkube/skiff/controllers/podstate"
	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs and the manager.
const Name = "nodelifecycle-controller"

// The components its Events come from, as kube-controller-manager names
// them (what `kubectl describe` shows in the From column): the node
// lifecycle controller's (a node registered, removed or not ready, a pod
// marked not ready) and the taint eviction controller's (a pod marked for
// deletion or spared), which are one controller here.
const (
	EventSource              = "node-controller"
	TaintEvictionEventSource = "taint-eviction-controller"
)

// Defaults as in kube-controller-manager.
const (
	// DefaultGracePeriod is kube-controller-manager's
	// --node-monitor-grace-period since Kubernetes 1.32 (40 s before): more
	// than the 45 s a kubelet's client takes to give up a dead HTTP/2
	// connection (ping and read-idle timeouts) and reconnect.
	DefaultGracePeriod = 50 * time.Second
	// DefaultStartupGracePeriod is kube-controller-manager's
	// --node-startup-grace-period: how long a node that has never posted a
	// Ready condition may stay silent, counted from its registration.
	DefaultStartupGracePeriod = 60 * time.Second
	DefaultMonitorPeriod      = 5 * time.Second
	LeaseNamespace            = corev1.NamespaceNodeLease
	NodeStatusUnknown         = "NodeStatusUnknown"
)

// MinGracePeriod is the renewal interval of node agents' and kubelets'
// Leases (a quarter of their 40 s duration): a grace period no longer than
// that would mark healthy nodes unreachable between two renewals.
const MinGracePeriod = 10 * time.Second

// CheckGracePeriod says why d cannot be a node monitor or startup grace
// period, or returns nil.
func CheckGracePeriod(d time.Duration) error {
	if d <= MinGracePeriod {
		return fmt.Errorf("must be more than %s: node agents renew their Leases every %s, so a shorter grace period marks healthy nodes unreachable between renewals", MinGracePeriod, MinGracePeriod)
	}
	return nil
}

// Options tune the controller; zero values mean the defaults.
type Options struct {
	// GracePeriod without a heartbeat before a node is considered unreachable.
	GracePeriod time.Duration
	// StartupGracePeriod replaces GracePeriod for a node that has never
	// posted a Ready condition: agents starting up get longer.
	StartupGracePeriod time.Duration
	// MonitorPeriod between health checks of all nodes.
	MonitorPeriod time.Duration
	// Eviction paces NoExecute taints by zone; nil is DefaultEviction.
	Eviction *Eviction
	// EvictionRecorder records what the taint eviction part does (pods
	// marked for deletion, deletions cancelled), under the component
	// kube-controller-manager's taint eviction controller reports; nil is
	// the recorder New is given.
	EvictionRecorder record.EventRecorder
	Logger           *slog.Logger
	Now              func() time.Time
}

// Controller watches node heartbeats, taints unhealthy nodes and evicts their pods.
type Controller struct {
	client      kubernetes.Interface
	nodeLister  corelisters.NodeLister
	leaseLister coordlisters.LeaseLister
	podIndexer  cache.Indexer
	synced      []cache.InformerSynced
	queue       runner.Queue
	recorder    record.EventRecorder
	evictionRec record.EventRecorder // Options.EvictionRecorder
	log         *slog.Logger
	grace       time.Duration
	startup     time.Duration // grace period of nodes without a Ready condition
	period      time.Duration
	now         func() time.Time

	eviction Eviction

	mu         sync.Mutex
	health     map[string]*nodeHealth // by node name
	disruption disruption             // the zones' states, last judged
	// disruptionKnown: disruption was judged at least once.
	disruptionKnown bool
	tainters        map[string]flowcontrol.RateLimiter
	// unmarked are the nodes marked Unknown whose pods were not all marked
	// not ready yet (an update failed): retried until done or the node is
	// Ready again, as kube-controller-manager's nodesToRetry.
	unmarked map[string]bool
	// arrived are the pods seen arriving on a node (added, which is every
	// pod when the controller starts, or bound), by node name and then pod
	// key (namespace/name), to be marked not ready if their node is not
	// Ready, as kube-controller-manager's processPod.
	arrived map[string]map[string]bool

	evictMu sync.Mutex
	// evictions are the pods' scheduled deletions, by node name and then
	// pod key (namespace/name).
	evictions map[string]map[string]scheduledEviction
	// evicted are the pods deleted for the node's NoExecute taints, by node
	// name and then pod key, until they are gone or the taints or their
	// tolerations change: their deletion is not sent again at each sync
	// while they terminate.
	evicted map[string]map[string]types.UID
	// noExecuteTaints are the NoExecute taints each node's pods were last checked
	// against, by node name: when they change, the pods deleted already are
	// judged again.
	noExecuteTaints map[string][]corev1.Taint
	// noExecuteShown are the NoExecute taints node updates showed since the
	// node's last check, by node name: taints that came and went between two
	// checks are a change too.
	noExecuteShown map[string][][]corev1.Taint
	// retolerated are the pods whose tolerations changed since their node's
	// last check, by node name and then pod key: judged again, deleted
	// already or not.
	retolerated map[string]map[string]types.UID
}

// nodeHealth is what the controller last saw of a node's heartbeats, and
// when by its own clock. As kube-controller-manager judges (its
// nodeHealthData), a node is unreachable when neither its Lease's renewal
// nor its Ready condition's heartbeat changed for the grace period. Judging
// the heartbeats' own times against the controller's clock would mark a node
// whose clock lags unreachable for good and, once the controller had been
// down or another server took over the lead, every node at once, their pods
// marked not ready and out of every Service.
type nodeHealth struct {
	probe     time.Time   // when a heartbeat was last seen to change (the controller's clock)
	heartbeat metav1.Time // the Ready condition's lastHeartbeatTime then
	renew     time.Time   // the Lease's renewTime then
	uid       types.UID   // the node's, for the event when it goes
}

const nodeNameIndex = "skiff-spec.nodeName"

// New wires the controller. The pod informer gets an index by spec.nodeName.
func New(client kubernetes.Interface, nodeInformer coreinformers.NodeInformer, leaseInformer coordinformers.LeaseInformer, podInformer coreinformers.PodInformer, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if client == nil || nodeInformer == nil || leaseInformer == nil || podInformer == nil || recorder == nil {
		return nil, fmt.Errorf("nodelifecycle: client, informers and recorder are required")
	}
	c := &Controller{
		client: client, nodeLister: nodeInformer.Lister(), leaseLister: leaseInformer.Lister(),
		podIndexer: podInformer.Informer().GetIndexer(),
		synced:     []cache.InformerSynced{nodeInformer.Informer().HasSynced, leaseInformer.Informer().HasSynced, podInformer.Informer().HasSynced},
		queue:      runner.NewQueue(Name), recorder: recorder, evictionRec: opts.EvictionRecorder, log: opts.Logger,
		grace: opts.GracePeriod, startup: opts.StartupGracePeriod, period: opts.MonitorPeriod, now: opts.Now,
		health: map[string]*nodeHealth{}, tainters: map[string]flowcontrol.RateLimiter{},
		evictions: map[string]map[string]scheduledEviction{}, evicted: map[string]map[string]types.UID{},
		noExecuteTaints: map[string][]corev1.Taint{},
		noExecuteShown:  map[string][][]corev1.Taint{},
		retolerated:     map[string]map[string]types.UID{},
		unmarked:        map[string]bool{},
		arrived:         map[string]map[string]bool{},
		eviction:        DefaultEviction(),
	}
	if opts.Eviction != nil {
		if err := opts.Eviction.Check(); err != nil {
			return nil, fmt.Errorf("nodelifecycle: %w", err)
		}
		c.eviction = *opts.Eviction
	}
	if c.evictionRec == nil {
		c.evictionRec = recorder
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.grace <= 0 {
		c.grace = DefaultGracePeriod
	}
	if c.startup <= 0 {
		c.startup = DefaultStartupGracePeriod
	}
	if c.period <= 0 {
		c.period = DefaultMonitorPeriod
	}
	if c.now == nil {
		c.now = time.Now
	}
	if err := podInformer.Informer().AddIndexers(cache.Indexers{nodeNameIndex: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("nodelifecycle: pod index: %w", err)
	}
	if _, err := nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue, UpdateFunc: c.nodeUpdated,
		DeleteFunc: c.enqueue, // to forget its health
	}); err != nil {
		return nil, err
	}
	// A pod newly bound to a tainted node must be checked too, and one whose
	// tolerations changed; a deleted one's scheduled deletion is cancelled.
	reg, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				c.podArrived(p)
			}
		},
		UpdateFunc: c.podUpdated,
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
				c.cancelEviction(p.Spec.NodeName, p.Namespace+"/"+p.Name, true)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	// The workers start once this handler has seen every pod listed, not
	// only the cache: each node's first sync then knows the pods that
	// arrived on it (podArrived).
	c.synced = append(c.synced, reg.HasSynced)
	return c, nil
}

// Run checks every node each monitor period, and reacts to node events, until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	go func() {
		t := time.NewTicker(c.period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				nodes, err := c.nodeLister.List(labels.Everything())
				if err != nil {
					continue
				}
				c.updateDisruption(nodes, c.now())
				for _, n := range nodes {
					c.queue.Add(n.Name)
				}
			}
		}
	}()
	runner.Run(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
}

// nodeUpdated syncs a node the informer shows changed, noting its new
// NoExecute taints when they changed: as Kubernetes' taint eviction
// controller (NodeUpdated) handles each such change, the node's pods are
// judged again even when the taints are back as they were by the next check.
func (c *Controller) nodeUpdated(old, cur any) {
	o, ok1 := old.(*corev1.Node)
	n, ok2 := cur.(*corev1.Node)
	if ok1 && ok2 {
		if taints := noExecuteOf(n); !apiequality.Semantic.DeepEqual(noExecuteOf(o), taints) {
			c.evictMu.Lock()
			shown := c.noExecuteShown[n.Name]
			if !slices.ContainsFunc(shown, func(s []corev1.Taint) bool { return apiequality.Semantic.DeepEqual(s, taints) }) {
				c.noExecuteShown[n.Name] = append(shown, taints)
			}
			c.evictMu.Unlock()
		}
	}
	c.enqueue(cur)
}

// noExecuteOf returns the node's NoExecute taints, in their order.
func noExecuteOf(n *corev1.Node) []corev1.Taint {
	var taints []corev1.Taint
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			taints = append(taints, t)
		}
	}
	return taints
}

// podUpdated syncs the node of a pod newly bound to it, or whose
// tolerations changed.
func (c *Controller) podUpdated(old, cur any) {
	o, ok1 := old.(*corev1.Pod)
	p, ok2 := cur.(*corev1.Pod)
	switch {
	case !ok1 || !ok2 || p.Spec.NodeName == "":
	case o.Spec.NodeName != p.Spec.NodeName:
		c.podArrived(p)
	case !apiequality.Semantic.DeepEqual(o.Spec.Tolerations, p.Spec.Tolerations):
		// Judged again, also when deleted already, as Kubernetes' taint
		// eviction controller handles a pod whose tolerations changed.
		c.evictMu.Lock()
		pods := c.retolerated[p.Spec.NodeName]
		if pods == nil {
			pods = map[string]types.UID{}
			c.retolerated[p.Spec.NodeName] = pods
		}
		pods[p.Namespace+"/"+p.Name] = p.UID
		c.evictMu.Unlock()
		c.queue.Add(p.Spec.NodeName)
	}
}

// podArrived notes a pod seen on its node for the first time (added, or
// bound) and syncs the node: the pod is checked against its taints, and
// marked not ready if the node is not Ready (markArrivedNotReady).
func (c *Controller) podArrived(p *corev1.Pod) {
	if p.Spec.NodeName == "" {
		return
	}
	c.mu.Lock()
	pods := c.arrived[p.Spec.NodeName]
	if pods == nil {
		pods = map[string]bool{}
		c.arrived[p.Spec.NodeName] = pods
	}
	pods[p.Namespace+"/"+p.Name] = true
	c.mu.Unlock()
	c.queue.Add(p.Spec.NodeName)
}

func (c *Controller) enqueue(obj any) {
	if key, ok := runner.KeyOf(obj); ok {
		c.queue.Add(key)
	}
}

// lastHeartbeat is when, by the controller's clock, a heartbeat of the node
// (a Lease renewal, a new Ready heartbeat) was last seen. A node seen for the
// first time counts as heard from now, so the grace period starts when this
// controller starts, unless it was never heard from at all: then it counts
// from its registration.
func (c *Controller) lastHeartbeat(node *corev1.Node, now time.Time) time.Time {
	var heartbeat metav1.Time
	if r := readyCondition(node); r != nil {
		heartbeat = r.LastHeartbeatTime
	}
	var renew time.Time
	if l, err := c.leaseLister.Leases(LeaseNamespace).Get(node.Name); err == nil {
		renew = leaseTime(l)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	h, seen := c.health[node.Name]
	switch {
	case !seen && heartbeat.IsZero() && renew.IsZero():
		h = &nodeHealth{probe: node.CreationTimestamp.Time}
	case !seen:
		h = &nodeHealth{probe: now}
	case !heartbeat.Equal(&h.heartbeat) || !renew.Equal(h.renew):
		// Any change, not only a later time: a node's clock may step back.
		h.probe = now
	}
	h.heartbeat, h.renew, h.uid = heartbeat, renew, node.UID
	c.health[node.Name] = h
	return h.probe
}

func leaseTime(l *coordinationv1.Lease) time.Time {
	if l.Spec.RenewTime != nil {
		return l.Spec.RenewTime.Time
	}
	return time.Time{}
}

func readyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func (c *Controller) sync(ctx context.Context, name string) error {
	cached, err := c.nodeLister.Get(name)
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		h, known := c.health[name]
		delete(c.health, name)
		delete(c.unmarked, name)
		delete(c.arrived, name)
		c.mu.Unlock()
		if known {
			c.nodeEvent(name, h.uid, "RemovingNode", "Removing Node %s from Controller")
		}
		return c.evictFromDeletedNode(ctx, name, c.now())
	}
	if err != nil {
		return err
	}
	// The cached node is only read here: every change is made on a copy
	// (markUnknown, reconcileTaints). Every node is synced each monitor
	// period, so copying it first cost 1,000 deep copies a second at 5,000
	// nodes, nearly all of them of nodes that needed nothing.
	node := cached
	now := c.now()
	grace := c.grace
	if readyCondition(node) == nil {
		grace = c.startup // never posted a status: still starting, as kube judges
	}
	c.mu.Lock()
	_, known := c.health[name]
	c.mu.Unlock()
	last := c.lastHeartbeat(node, now)
	if !known {
		c.nodeEvent(name, node.UID, "RegisteredNode", "Registered Node %s in Controller")
	}
	if now.Sub(last) > grace {
		// The Ready condition markUnknown writes for a node that never
		// posted one is seen as a heartbeat next time: harmless, as
		// marking is done once and taints follow the condition.
		marked, err := c.markUnknown(ctx, node, now)
		if err != nil {
			// Its taints wait for its condition; the evictions its taints
			// bring already do not.
			return errors.Join(err, c.evict(ctx, node, now))
		}
		node = marked
	}
	// A failure of one step holds up none of the others: as in
	// kube-controller-manager, a pod that cannot be marked not ready keeps
	// neither the node's taints (put on before the pods are marked) nor the
	// evictions (its own controller's) from being done. The failures are
	// reported together, and the node synced again.
	var errs []error
	errs = append(errs, c.retryMarkPodsNotReady(ctx, node, now), c.markArrivedNotReady(ctx, node, now))
	if labelled, err := c.reconcileLabels(ctx, node); err != nil {
		errs = append(errs, err)
	} else {
		node = labelled
	}
	if tainted, err := c.reconcileTaints(ctx, node, now); err != nil {
		errs = append(errs, err)
	} else {
		node = tainted
	}
	errs = append(errs, c.evict(ctx, node, now))
	return errors.Join(errs...)
}

// nodeEvent records one of kube-controller-manager's events of the nodes it
// keeps track of: RegisteredNode when it first sees one (each node again
// after a restart or a change of leader), RemovingNode when one is gone.
func (c *Controller) nodeEvent(name string, uid types.UID, reason, what string) {
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: name, UID: uid}
	c.recorder.Eventf(ref, corev1.EventTypeNormal, reason, "Node %s event: "+what, name, name)
}

// markUnknown sets every condition the agent owns to Unknown, once. As Kubernetes' monitorNodeHealth,
// the NodeNotReady event, and the marking of the node's pods not ready, are for the node this write
// takes out of Ready only: one whose agent already reported Ready False (and recorded that itself)
// or never reported at all was not ready before, so its going Unknown is no such transition.
func (c *Controller) markUnknown(ctx context.Context, node *corev1.Node, now time.Time) (*corev1.Node, error) {
	wasReady := nodeReady(node)
	next := node.DeepCopy()
	ts := metav1.NewTime(now)
	types := []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure}
	for _, t := range types {
		found := false
		for i := range next.Status.Conditions {
			cnd := &next.Status.Conditions[i]
			if cnd.Type != t {
				continue
			}
			found = true
			if cnd.Status != corev1.ConditionUnknown {
				cnd.Status, cnd.Reason, cnd.Message, cnd.LastTransitionTime = corev1.ConditionUnknown, NodeStatusUnknown, "Kubelet stopped posting node status.", ts
			}
		}
		if !found {
			next.Status.Conditions = append(next.Status.Conditions, corev1.NodeCondition{Type: t, Status: corev1.ConditionUnknown,
				Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.", LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: ts})
		}
	}
	if apiequality.Semantic.DeepEqual(node.Status, next.Status) {
		return node, nil
	}
	updated, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("mark node %s unknown: %w", node.Name, err)
	}
	c.log.Info("node stopped heartbeating", "node", node.Name)
	if wasReady {
		c.recorder.Eventf(node, corev1.EventTypeNormal, "NodeNotReady", "Node %s status is now: NodeNotReady", node.Name)
		// Its pods are marked not ready for the same transition only: those of
		// a node whose agent reported Ready False keep the readiness the agent
		// gave them, as kube-controller-manager leaves them.
		c.mu.Lock()
		c.unmarked[node.Name] = true
		c.mu.Unlock()
	}
	return updated, nil
}

// retryMarkPodsNotReady marks the pods of a node marked Unknown not ready,
// until every one is, or the node is Ready again.
func (c *Controller) retryMarkPodsNotReady(ctx context.Context, node *corev1.Node, now time.Time) error {
	c.mu.Lock()
	pending := c.unmarked[node.Name]
	c.mu.Unlock()
	if !pending {
		return nil
	}
	if !nodeReady(node) {
		if err := c.markPodsNotReady(ctx, node.Name, now); err != nil {
			return err
		}
	}
	c.mu.Lock()
	delete(c.unmarked, node.Name)
	c.mu.Unlock()
	return nil
}

// markArrivedNotReady marks the pods that arrived on the node since its last
// sync not ready when the node's Ready condition is there and not True, as
// kube-controller-manager's processPod: a pod bound to a node that is down,
// and, when the controller starts (every pod arrives then), a pod still Ready
// on a node already down, whose marking the last leader did not finish (its
// failed updates are retried from memory only). Those of a node whose agent
// reports Ready False are marked too, as kube marks them. Unlike kube, which
// may handle a pod before it has judged the node and then leaves it as it
// is, every pod is checked once its node has been. Pods whose update failed
// are checked again on the next sync.
func (c *Controller) markArrivedNotReady(ctx context.Context, node *corev1.Node, now time.Time) error {
	c.mu.Lock()
	pods := c.arrived[node.Name]
	delete(c.arrived, node.Name)
	c.mu.Unlock()
	r := readyCondition(node)
	if len(pods) == 0 || r == nil || r.Status == corev1.ConditionTrue {
		return nil
	}
	var objs []*corev1.Pod
	for key := range pods {
		o, ok, err := c.podIndexer.GetByKey(key)
		if err != nil {
			return err
		}
		if p, _ := o.(*corev1.Pod); ok && p != nil && p.Spec.NodeName == node.Name {
			objs = append(objs, p)
		}
	}
	failed, err := c.markNotReady(ctx, objs, now)
	if len(failed) > 0 {
		c.mu.Lock()
		again := c.arrived[node.Name]
		if again == nil {
			again = map[string]bool{}
			c.arrived[node.Name] = again
		}
		for _, key := range failed {
			again[key] = true
		}
		c.mu.Unlock()
	}
	return err
}

// markPodsNotReady flips the Ready condition of the node's pods to False so
// endpoints drop them, with Kubernetes' "NodeNotReady" warning on each pod
// (each try, as kube records it also when the update fails).
// The condition keeps its reason and message, as kube-controller-manager
// leaves them. Every pod is tried; the first error is returned.
func (c *Controller) markPodsNotReady(ctx context.Context, nodeName string, now time.Time) error {
	objs, err := c.podIndexer.ByIndex(nodeNameIndex, nodeName)
	if err != nil {
		return err
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		pods = append(pods, o.(*corev1.Pod))
	}
	_, err = c.markNotReady(ctx, pods, now)
	return err
}

// markNotReady flips the pods' Ready conditions to False, as
// markPodsNotReady. It returns the keys of the pods whose update failed, and
// the first error.
func (c *Controller) markNotReady(ctx context.Context, pods []*corev1.Pod, now time.Time) (failed []string, first error) {
	for _, p := range pods {
		pod := p.DeepCopy()
		changed := false
		for i := range pod.Status.Conditions {
			cnd := &pod.Status.Conditions[i]
			if cnd.Type == corev1.PodReady && cnd.Status != corev1.ConditionFalse {
				cnd.Status, cnd.LastTransitionTime = corev1.ConditionFalse, metav1.NewTime(now)
				changed = true
			}
		}
		if !changed {
			continue
		}
		_, err := c.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			failed = append(failed, pod.Namespace+"/"+pod.Name)
			if first == nil {
				first = fmt.Errorf("mark pod %s/%s not ready: %w", pod.Namespace, pod.Name, err)
			}
		}
		// As Kubernetes' MarkPodsNotReady: once the update was tried, also
		// when it failed, but not for a pod that is gone.
		c.recorder.Event(pod, corev1.EventTypeWarning, "NodeNotReady", "Node is not ready")
	}
	return failed, first
}

// conditionTaints are Kubernetes' TaintNodesByCondition: the NoSchedule
// taint each condition status puts on a node.
var conditionTaints = map[corev1.NodeConditionType]map[corev1.ConditionStatus]string{
	corev1.NodeReady:              {corev1.ConditionFalse: corev1.TaintNodeNotReady, corev1.ConditionUnknown: corev1.TaintNodeUnreachable},
	corev1.NodeMemoryPressure:     {corev1.ConditionTrue: corev1.TaintNodeMemoryPressure},
	corev1.NodeDiskPressure:       {corev1.ConditionTrue: corev1.TaintNodeDiskPressure},
	corev1.NodePIDPressure:        {corev1.ConditionTrue: corev1.TaintNodePIDPressure},
	corev1.NodeNetworkUnavailable: {corev1.ConditionTrue: corev1.TaintNodeNetworkUnavailable},
}

// noScheduleManaged are the NoSchedule taint keys this controller owns.
var noScheduleManaged = map[string]bool{
	corev1.TaintNodeNotReady: true, corev1.TaintNodeUnreachable: true, corev1.TaintNodeMemoryPressure: true,
	corev1.TaintNodeDiskPressure: true, corev1.TaintNodePIDPressure: true, corev1.TaintNodeNetworkUnavailable: true,
	corev1.TaintNodeUnschedulable: true,
}

// reconcileTaints keeps the controller's taints in line with the node: the
// NoExecute not-ready/unreachable taint from the Ready condition (pods are
// evicted by it), and the NoSchedule taints of TaintNodesByCondition (the
// conditions above, and unschedulable for a cordoned node), which keep new
// pods off.
func (c *Controller) reconcileTaints(ctx context.Context, node *corev1.Node, now time.Time) (*corev1.Node, error) {
	wantNoExecute := ""
	r := readyCondition(node)
	if r != nil {
		switch r.Status {
		case corev1.ConditionUnknown:
			wantNoExecute = corev1.TaintNodeUnreachable
		case corev1.ConditionFalse:
			wantNoExecute = corev1.TaintNodeNotReady
		}
	}
	// A node without a Ready condition (still starting, or one whose
	// condition was taken away) keeps the node-health NoExecute taints it
	// has, as kube-controller-manager judges no taint for it: it is neither
	// Ready, which takes them off, nor known to be down, which puts one on.
	// Only master disruption mode lifts them, as it lifts every node's.
	keepNoExecute := r == nil && hasHealthNoExecute(node)
	if keepNoExecute {
		if _, lift := c.noExecute(node, now, false); lift {
			keepNoExecute = false
		}
	}
	wantNoSchedule := map[string]bool{}
	for _, cnd := range node.Status.Conditions {
		if key := conditionTaints[cnd.Type][cnd.Status]; key != "" {
			wantNoSchedule[key] = true
		}
	}
	if node.Spec.Unschedulable {
		wantNoSchedule[corev1.TaintNodeUnschedulable] = true
	}
	addNoExecute := false
	if wantNoExecute != "" {
		has, swap := false, false
		for _, t := range node.Spec.Taints {
			if isHealthNoExecute(t) {
				has = has || t.Key == wantNoExecute
				swap = swap || t.Key != wantNoExecute
			}
		}
		// A new taint waits for its zone's pace, or for the zone to heal.
		// One that replaces the other node-health taint (not-ready became
		// unreachable, or back) does not, as kube-controller-manager swaps
		// them at once: waiting would leave the node, already judged, without
		// a NoExecute taint, for good in a zone whose pace is 0.
		allowed, lift := c.noExecute(node, now, !has && !swap)
		if lift {
			wantNoExecute = "" // master disruption mode: evict nothing
		}
		addNoExecute = !has && allowed && !lift
	}
	var taints []corev1.Taint
	hasNoSchedule := map[string]bool{}
	for _, t := range node.Spec.Taints {
		switch {
		case isHealthNoExecute(t):
			if t.Key != wantNoExecute && !keepNoExecute {
				continue
			}
		case t.Effect == corev1.TaintEffectNoSchedule && noScheduleManaged[t.Key]:
			if !wantNoSchedule[t.Key] || hasNoSchedule[t.Key] {
				continue
			}
			hasNoSchedule[t.Key] = true
		}
		taints = append(taints, t)
	}
	// Every taint added has its timeAdded, the NoSchedule ones too, as
	// kube-controller-manager writes them; taints already there keep theirs
	// (one a user or another writer put on may have none).
	ts := metav1.NewTime(now)
	if addNoExecute {
		taints = append(taints, corev1.Taint{Key: wantNoExecute, Effect: corev1.TaintEffectNoExecute, TimeAdded: &ts})
	}
	var add []string
	for key := range wantNoSchedule {
		if !hasNoSchedule[key] {
			add = append(add, key)
		}
	}
	sort.Strings(add)
	for _, key := range add {
		taints = append(taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &ts})
	}
	if apiequality.Semantic.DeepEqual(taints, node.Spec.Taints) {
		return node, nil
	}
	next := node.DeepCopy()
	next.Spec.Taints = taints
	updated, err := c.client.CoreV1().Nodes().Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("update taints of node %s: %w", node.Name, err)
	}
	return updated, nil
}

// isHealthNoExecute says whether t is the NoExecute taint of a node not
// ready or unreachable, which this controller owns.
func isHealthNoExecute(t corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoExecute && (t.Key == corev1.TaintNodeUnreachable || t.Key == corev1.TaintNodeNotReady)
}

// hasHealthNoExecute says whether the node has a not-ready or unreachable
// NoExecute taint.
func hasHealthNoExecute(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, isHealthNoExecute)
}

// scheduledEviction is when a pod that tolerates its node's NoExecute taints
// for a while is to be deleted, or a failed eviction to be tried again.
type scheduledEviction struct {
	uid types.UID
	at  time.Time
	// retry: the pod's eviction was tried, its event recorded, and every
	// try failed. It is due, and not a deletion waiting for a toleration to
	// run out: dropping it is no cancellation to announce.
	retry bool
}

// evict deletes the pods that do not tolerate the node's NoExecute taints
// and schedules the deletion of those that tolerate them for a while, as
// Kubernetes' taint eviction controller: the pod stays for the shortest
// tolerationSeconds of the tolerations it uses, counted from when the
// controller first saw it on the tainted node (not from the taint's
// timeAdded: a pod bound to a node tainted long ago gets its whole
// toleration, and a new leader starts the count again). A scheduled deletion
// is kept as it is while the taints change, even when the new ones are
// tolerated for less time (Kubernetes keeps the scheduled work that was
// created before now), and cancelled (with a "Cancelling deletion" event)
// when the node loses its NoExecute taints or the pod comes to tolerate them
// without a limit. When the NoExecute taints change (one swapped for
// another, one added or removed, also when they are back as they were by
// this check), the pods deleted already and still there are judged again,
// as Kubernetes' handleNodeUpdate judges every pod of the node: deleted
// again at once, or after their toleration counted from now; so is one
// whose tolerations changed, as its handlePodUpdate.
// The node is requeued for the earliest deletion still to come.
func (c *Controller) evict(ctx context.Context, node *corev1.Node, now time.Time) error {
	taints := noExecuteOf(node)
	if len(taints) == 0 {
		c.cancelEvictions(node.Name)
		return nil
	}
	changed, retolerated := c.noExecuteSeen(node.Name, taints)
	objs, err := c.podIndexer.ByIndex(nodeNameIndex, node.Name)
	if err != nil {
		return err
	}
	var next time.Duration
	var errs []error
	seen := make(map[string]bool, len(objs))
	for _, o := range objs {
		pod := o.(*corev1.Pod)
		key := pod.Namespace + "/" + pod.Name
		seen[key] = true
		// A pod terminating already is evicted too, once, as Kubernetes'
		// taint manager handles it: marked DisruptionTarget (a Job's
		// podFailurePolicy then tells its end from a failure) and its
		// deletion sent (which keeps the grace period it has), with the
		// event. Those this controller deleted are not deleted again while
		// the taints stay as they are, even while the cache does not show
		// their deletion yet.
		if c.wasEvicted(node.Name, key, pod.UID) {
			if retolerated[key] != pod.UID {
				continue
			}
			c.forgetEvicted(node.Name, key)
		}
		if changed || retolerated[key] == pod.UID {
			// A failed eviction is judged afresh on a change, as
			// Kubernetes drops failed work and judges the pod again:
			// deleted at once (with its event again), after its new
			// toleration, or not at all.
			c.dropRetry(node.Name, key)
		}
		limit, forever, tolerated := tolerationLimit(pod, taints)
		switch {
		case !tolerated:
			// A deletion waiting for a toleration that no longer holds is
			// cancelled, with its event, for one at once; a failed eviction
			// is kept, to be tried again without a second event.
			if !c.retrying(node.Name, key, pod.UID) {
				c.cancelEviction(node.Name, key, true)
			}
		case forever:
			c.cancelEviction(node.Name, key, true)
			continue
		default:
			if at := c.scheduleEviction(node.Name, key, pod.UID, now.Add(limit)); at.After(now) {
				if wait := at.Sub(now); next == 0 || wait < next {
					next = wait
				}
				continue
			}
		}
		// One pod's failure holds up no other: each is evicted on its own,
		// as in Kubernetes.
		errs = append(errs, c.evictPod(ctx, node.Name, pod))
	}
	c.forgetEvictions(node.Name, seen)
	if next > 0 {
		c.queue.AddAfter(node.Name, next)
	}
	return errors.Join(errs...)
}

// An eviction tries the marking and the deletion up to evictTries times,
// evictRetryPause apart, as Kubernetes' taint eviction controller
// (deletePodHandler) does within one attempt.
const (
	evictTries      = 5
	evictRetryPause = 10 * time.Millisecond
)

// evictPod deletes the pod for its node's NoExecute taints, with Kubernetes'
// taint manager's event, and notes it evicted. The event is recorded once
// per eviction, before its first try, as Kubernetes records it also when
// every try fails. An eviction whose tries all failed stays due, and a
// later sync tries it again (Kubernetes waits for the next change of the
// node or the pod) without a second event, until the NoExecute taints or
// the pod's tolerations change: it is then judged afresh, as there.
func (c *Controller) evictPod(ctx context.Context, nodeName string, pod *corev1.Pod) error {
	key := pod.Namespace + "/" + pod.Name
	// Done with before the deletion: its watch event may come before
	// Delete returns, and must not read as a cancellation.
	s, scheduled := c.cancelEviction(nodeName, key, false)
	if !scheduled || !s.retry || s.uid != pod.UID {
		c.evictionRec.Eventf(pod, corev1.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod %s/%s", pod.Namespace, pod.Name)
	}
	var err error
	for try := range evictTries {
		if try > 0 {
			select {
			case <-ctx.Done():
				c.retryEviction(nodeName, key, pod.UID)
				return fmt.Errorf("evict pod %s/%s: %w", pod.Namespace, pod.Name, err)
			case <-time.After(evictRetryPause):
			}
		}
		if err = c.markAndDelete(ctx, pod); err == nil {
			c.evictedPod(nodeName, key, pod.UID)
			return nil
		}
	}
	c.retryEviction(nodeName, key, pod.UID)
	return fmt.Errorf("evict pod %s/%s: %w", pod.Namespace, pod.Name, err)
}

// markAndDelete marks the pod DisruptionTarget and deletes it: one try of an
// eviction. As Kubernetes' taint manager does, the pod is marked first, so
// its owner can tell this eviction from a failure (a Job's
// podFailurePolicy).
func (c *Controller) markAndDelete(ctx context.Context, pod *corev1.Pod) error {
	if err := podstate.MarkDisrupted(ctx, c.client, pod, Name, "DeletionByTaintManager",
		"Taint manager: deleting due to NoExecute taint", false); err != nil {
		return err
	}
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}

// evictFromDeletedNode carries out the deletions scheduled on a node that is
// gone, each when due, as Kubernetes' taint manager keeps its timers when a
// node is deleted: a pod whose tolerationSeconds run out before the pod
// garbage collector removes the node's pods (40 s after the node went) is
// deleted then, and its owner replaces it then. A pod gone, or bound
// elsewhere, is dropped.
func (c *Controller) evictFromDeletedNode(ctx context.Context, nodeName string, now time.Time) error {
	c.evictMu.Lock()
	scheduled := maps.Clone(c.evictions[nodeName])
	c.evictMu.Unlock()
	// Only scheduled deletions are carried out here: no pod is looked at
	// again, so none needs to be remembered as evicted.
	defer func() {
		c.evictMu.Lock()
		delete(c.evicted, nodeName)
		delete(c.noExecuteTaints, nodeName)
		delete(c.noExecuteShown, nodeName)
		delete(c.retolerated, nodeName)
		c.evictMu.Unlock()
	}()
	var next time.Duration
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(scheduled)) {
		s := scheduled[key]
		o, ok, err := c.podIndexer.GetByKey(key)
		if err != nil {
			return err
		}
		pod, _ := o.(*corev1.Pod)
		if !ok || pod == nil || pod.UID != s.uid || pod.Spec.NodeName != nodeName {
			c.cancelEviction(nodeName, key, false) // its deletion event said so
			continue
		}
		if s.at.After(now) {
			if wait := s.at.Sub(now); next == 0 || wait < next {
				next = wait
			}
			continue
		}
		errs = append(errs, c.evictPod(ctx, nodeName, pod))
	}
	if next > 0 {
		c.queue.AddAfter(nodeName, next)
	}
	return errors.Join(errs...)
}

// noExecuteSeen notes the node's NoExecute taints, which its pods are about to
// be checked against. When they are not those of the last check, or node
// updates showed others since, the pods deleted already are forgotten, so
// that they are evicted again under the new taints, as Kubernetes' taint
// eviction controller handles every pod of a node on each change of its
// NoExecute taints (timeAdded, value and order included, as it compares
// them). A change the informer shows after this check judged it (a taint
// this controller wrote) is the same change, not another. It returns the
// pods whose tolerations changed since the last check, by key: judged
// again, deleted already or not; and whether the taints changed.
func (c *Controller) noExecuteSeen(nodeName string, taints []corev1.Taint) (bool, map[string]types.UID) {
	c.evictMu.Lock()
	defer c.evictMu.Unlock()
	last, ok := c.noExecuteTaints[nodeName]
	changed := !ok || !apiequality.Semantic.DeepEqual(last, taints)
	for _, shown := range c.noExecuteShown[nodeName] {
		changed = changed || !apiequality.Semantic.DeepEqual(last, shown)
	}
	delete(c.noExecuteShown, nodeName)
	if changed {
		delete(c.evicted, nodeName)
	}
	c.noExecuteTaints[nodeName] = taints
	retolerated := c.retolerated[nodeName]
	delete(c.retolerated, nodeName)
	return changed, retolerated
}

// evictedPod notes that the pod was deleted for its node's NoExecute taints.
func (c *Controller) evictedPod(nodeName, key string, uid types.UID) {
	c.evictMu.Lock()
	defer c.evictMu.Unlock()
	pods := c.evicted[nodeName]
	if pods == nil {
		pods = map[string]types.UID{}
		c.evicted[nodeName] = pods
	}
	pods[key] = uid
}

// forgetEvicted forgets that the pod was deleted for its node's NoExecute
// taints: it is judged again.
func (c *Controller) forgetEvicted(nodeName, key string) {
	c.evictMu.Lock()
	defer c.evictMu.Unlock()
	deleteNested(c.evicted, nodeName, key)
}

// wasEvicted says whether this pod was deleted for its node's NoExecute
// taints (since they last changed).
func (c *Controller) wasEvicted(nodeName, key string, uid types.UID) bool {
	c.evictMu.Lock()
	defer c.evictMu.Unlock()
	u, ok := c.evicted[nodeName][key]
	return ok && u == uid
}

// scheduleEviction schedules the pod's deletion at at, unless one is
// scheduled already: that one stays. It returns when the deletion is due.
func (c *Controller) scheduleEviction(nodeName, key string, uid types.UID, at time.Time) time.Time {
	c.evictMu.Lock()
	defer c.evictMu.Unlock()
	pods := c.evictions[nodeName]
	if s, ok := pods[key]; ok && s.uid == uid {
		return s.at
	}
	if pods == nil {
		pods = map[string]scheduledEviction{}
		c.evictions[nodeName] = pods
	}
	pods[key] = scheduledEviction{uid: uid, at: at}
	return at
}

// cancelEviction drops the pod's scheduled deletion, saying so in an event
// when told to and there was one (a failed eviction to be tried again is
// dropped silently). It returns what was dropped.
func (c *Controller) cancelEviction(nodeName, key string, announce bool) (scheduledEviction, bool) {
	c.evictMu.Lock()
	s, ok := c.evictions[nodeName][key]
	deleteNested(c.evictions, nodeName, key)
	c.evictMu.Unlock()
	if ok && announce && !s.retry {
		c.announceCancel(key)
	}
	return s, ok
}

// retryEviction notes the pod's failed eviction, due at once.
func (c *Controller) retryEviction(nodeName, key string, uid types.UID) {
	c.evictMu.Lock()
	defer c.evictMu.Unlock()
	pods := c.evictions[nodeName]
	if pods == nil {
		pods = map[string]scheduledEviction{}
		c.evictions[nodeName] = pods
	}
	pods[key] = scheduledEviction{uid: uid, retry: true}
}

// dropRetry forgets the pod's failed eviction, if it has one, silently.
func (c *Controller) dropRetry(nodeName, key string) {
	c.evictMu.Lock()
	defer c.evictMu.Unlock()
	if s, ok := c.evictions[nodeName][key]; ok && s.retry {
		deleteNested(c.evictions, nodeName, key)
	}
}

// retrying says whether the pod's eviction failed and is to be tried again.
func (c *Controller) retrying(nodeName, key string, uid types.UID) bool {
	c.evictMu.Lock()
	defer c.evictMu.Unlock()
	s, ok := c.evictions[nodeName][key]
	return ok && s.retry && s.uid == uid
}

// cancelEvictions cancels every deletion scheduled on the node: it lost its
// NoExecute taints.
func (c *Controller) cancelEvictions(nodeName string) {
	c.evictMu.Lock()
	pods := c.evictions[nodeName]
	delete(c.evictions, nodeName)
	// Tainted again, its pods still terminating are evicted again, as
	// Kubernetes' taint manager handles every pod on a node newly tainted.
	delete(c.evicted, nodeName)
	delete(c.noExecuteTaints, nodeName)
	delete(c.noExecuteShown, nodeName)
	delete(c.retolerated, nodeName)
	c.evictMu.Unlock()
	keys := slices.Sorted(maps.Keys(pods))
	for _, key := range keys {
		if !pods[key].retry {
			c.announceCancel(key)
		}
	}
}

// forgetEvictions drops the node's scheduled deletions of pods no longer on
// it (their deletion event may have been missed).
func (c *Controller) forgetEvictions(nodeName string, pods map[string]bool) {
	c.evictMu.Lock()
	defer c.evictMu.Unlock()
	for key := range c.evictions[nodeName] {
		if !pods[key] {
			delete(c.evictions[nodeName], key)
		}
	}
	if len(c.evictions[nodeName]) == 0 {
		delete(c.evictions, nodeName)
	}
	for key := range c.evicted[nodeName] {
		if !pods[key] {
			delete(c.evicted[nodeName], key)
		}
	}
	if len(c.evicted[nodeName]) == 0 {
		delete(c.evicted, nodeName)
	}
}

// announceCancel records Kubernetes' taint manager event for a cancelled
// deletion on the pod key (namespace/name).
func (c *Controller) announceCancel(key string) {
	ns, name, _ := strings.Cut(key, "/")
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: name}
	c.evictionRec.Eventf(ref, corev1.EventTypeNormal, "TaintManagerEviction", "Cancelling deletion of Pod %s", key)
}

// tolerationLimit says how long the pod may stay on a node with these
// NoExecute taints: tolerated is false when it does not tolerate one of them,
// forever true when it tolerates all without a limit; otherwise limit is the
// shortest tolerationSeconds of the tolerations used (0 when one is 0 or
// less).
func tolerationLimit(pod *corev1.Pod, taints []corev1.Taint) (limit time.Duration, forever, tolerated bool) {
	forever = true
	for i := range taints {
		tol := matching(pod.Spec.Tolerations, &taints[i])
		if tol == nil {
			return 0, false, false
		}
		if tol.TolerationSeconds == nil {
			continue
		}
		d := time.Duration(max(*tol.TolerationSeconds, 0)) * time.Second
		if forever || d < limit {
			limit = d
		}
		forever = false
	}
	return limit, forever, true
}

// matching returns the pod's first toleration of taint, or nil. As
// Kubernetes' taint eviction controller, the first one is the one used,
// even when a later one tolerates the taint for a different time.
func matching(tols []corev1.Toleration, taint *corev1.Taint) *corev1.Toleration {
	for i := range tols {
		tol := &tols[i]
		if tol.Effect != "" && tol.Effect != taint.Effect {
			continue
		}
		switch tol.Operator {
		case corev1.TolerationOpExists:
			if tol.Key != "" && tol.Key != taint.Key {
				continue
			}
		case corev1.TolerationOpEqual, "":
			if tol.Key != taint.Key || tol.Value != taint.Value {
				continue
			}
		default:
			continue
		}
		return tol
	}
	return nil
}

// The deprecated node labels, each kept equal to its stable one.
const (
	labelOSBeta   = "beta.kubernetes.io/os"
	labelArchBeta = "beta.kubernetes.io/arch"
)

var betaLabels = [...]struct{ stable, beta string }{
	{corev1.LabelOSStable, labelOSBeta},
	{corev1.LabelArchStable, labelArchBeta},
}

// reconcileLabels sets the node's beta.kubernetes.io/os and arch labels to
// its kubernetes.io/os and arch, adding them when missing, as
// kube-controller-manager's node lifecycle controller does: nodeSelectors
// written for the beta labels (many charts still select
// beta.kubernetes.io/os: linux) must match nodes whose agent sets only the
// stable ones. A merge patch of the labels alone, so an agent's concurrent
// write is no conflict.
func (c *Controller) reconcileLabels(ctx context.Context, node *corev1.Node) (*corev1.Node, error) {
	set := map[string]string{}
	for _, l := range betaLabels {
		v, ok := node.Labels[l.stable]
		if !ok {
			continue
		}
		if b, has := node.Labels[l.beta]; !has || b != v {
			set[l.beta] = v
		}
	}
	if len(set) == 0 {
		return node, nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": set}})
	if err != nil {
		return nil, err
	}
	updated, err := c.client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("update labels of node %s: %w", node.Name, err)
	}
	return updated, nil
}

// deleteNested deletes m[outer][inner], and m[outer] once it is empty, so
// that nodes with nothing scheduled keep no map.
func deleteNested[V any](m map[string]map[string]V, outer, inner string) {
	delete(m[outer], inner)
	if len(m[outer]) == 0 {
		delete(m, outer)
	}
}
