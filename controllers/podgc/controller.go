package podgc

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/podstate"
)

// Name is the controller's name in logs, events and the manager.
const Name = "pod-garbage-collector"

// evictedReason is the status reason of a pod the kubelet evicted.
const evictedReason = "Evicted"

// fieldManager owns what PodGC writes to pod statuses, as in Kubernetes.
const fieldManager = "PodGC"

// Defaults, as kube-controller-manager's.
const (
	DefaultThreshold  = 12500
	DefaultPeriod     = 20 * time.Second
	DefaultQuarantine = 40 * time.Second
)

// Event reasons.
const (
	ReasonTerminated = "PodGCTerminated"
	ReasonOrphaned   = "PodGCOrphaned"
	ReasonUnbound    = "PodGCUnscheduledTerminating"
	// ReasonOutOfService: a pod stuck terminating on a node an administrator declared
	// out of service (non-graceful node shutdown).
	ReasonOutOfService = "PodGCOutOfServiceNode"
)

// Options tune the controller; zero values mean the defaults.
type Options struct {
	Logger *slog.Logger
	// Threshold of terminated pods kept; negative disables that sweep.
	Threshold int
	Period    time.Duration
	// Quarantine is how long a node must be missing before its pods are deleted, so a node that is
	// being re-registered is not mistaken for a gone one.
	Quarantine time.Duration
	Now        func() time.Time
}

// Controller is the pod garbage collector.
type Controller struct {
	client     kubernetes.Interface
	podLister  corelisters.PodLister
	nodeLister corelisters.NodeLister
	synced     []cache.InformerSynced
	recorder   record.EventRecorder
	log        *slog.Logger
	opts       Options

	mu          sync.Mutex
	missingFrom map[string]time.Time // node name → when first seen missing
}

// New wires the controller to the informers. Call it before the informer factory is started.
func New(client kubernetes.Interface, podInformer coreinformers.PodInformer, nodeInformer coreinformers.NodeInformer, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if client == nil || podInformer == nil || nodeInformer == nil || recorder == nil {
		return nil, fmt.Errorf("podgc: client, informers and recorder are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Threshold == 0 {
		opts.Threshold = DefaultThreshold
	}
	if opts.Period <= 0 {
		opts.Period = DefaultPeriod
	}
	if opts.Quarantine <= 0 {
		opts.Quarantine = DefaultQuarantine
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Controller{
		client: client, podLister: podInformer.Lister(), nodeLister: nodeInformer.Lister(),
		synced:   []cache.InformerSynced{podInformer.Informer().HasSynced, nodeInformer.Informer().HasSynced},
		recorder: recorder, log: opts.Logger, opts: opts, missingFrom: map[string]time.Time{},
	}, nil
}

// Run sweeps every Period until ctx ends (workers is unused: one sweep at a time).
func (c *Controller) Run(ctx context.Context, _ int) {
	c.log.Info("starting controller", "controller", Name)
	defer c.log.Info("stopped controller", "controller", Name)
	if !cache.WaitForNamedCacheSync(Name, ctx.Done(), c.synced...) {
		return
	}
	t := time.NewTicker(c.opts.Period)
	defer t.Stop()
	for {
		c.sweep(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweep runs the three collections once.
func (c *Controller) sweep(ctx context.Context) {
	pods, err := c.podLister.List(labels.Everything())
	if err != nil {
		return
	}
	if c.opts.Threshold > 0 {
		c.collectTerminated(ctx, pods)
	}
	c.collectOrphaned(ctx, pods)
	c.collectUnscheduledTerminating(ctx, pods)
	c.collectOutOfService(ctx, pods)
}

// collectTerminated deletes the terminated pods beyond the threshold. As in Kubernetes, those already
// being deleted (held by a finalizer, say) count towards it and take their turn in the order, so the
// threshold bounds every terminated pod the API still holds; but where Kubernetes deletes them again
// on every sweep (which changes nothing and inflates the deletion metric), they are skipped here.
func (c *Controller) collectTerminated(ctx context.Context, pods []*corev1.Pod) {
	var done []*corev1.Pod
	for _, p := range pods {
		if podstate.IsTerminal(p) {
			done = append(done, p)
		}
	}
	excess := len(done) - c.opts.Threshold
	if excess <= 0 {
		return
	}
	// As Kubernetes': pods the kubelet evicted go first, then the oldest; pods created in the same
	// second (creation times have no finer grain) in the order of their names.
	sort.Slice(done, func(i, j int) bool {
		if ei, ej := isEvicted(done[i]), isEvicted(done[j]); ei != ej {
			return ei
		}
		if ti, tj := done[i].CreationTimestamp, done[j].CreationTimestamp; !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		return done[i].Name < done[j].Name
	})
	for _, p := range done[:excess] {
		if p.DeletionTimestamp != nil {
			continue
		}
		c.delete(ctx, p, false, "", ReasonTerminated, fmt.Sprintf("Deleted: more than %d terminated pods", c.opts.Threshold))
	}
}

// isEvicted reports whether the kubelet evicted p (Kubernetes' eviction.PodIsEvicted).
func isEvicted(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed && p.Status.Reason == evictedReason
}

func (c *Controller) collectOrphaned(ctx context.Context, pods []*corev1.Pod) {
	now := c.opts.Now()
	missing := map[string]bool{}
	for _, p := range pods {
		n := p.Spec.NodeName
		if n == "" || missing[n] {
			continue
		}
		if _, err := c.nodeLister.Get(n); err == nil {
			continue
		}
		missing[n] = true
	}
	c.mu.Lock()
	for n := range c.missingFrom {
		if !missing[n] {
			delete(c.missingFrom, n) // came back, or its pods are gone
		}
	}
	var gone []string
	for n := range missing {
		since, seen := c.missingFrom[n]
		if !seen {
			c.missingFrom[n] = now
			continue
		}
		if now.Sub(since) >= c.opts.Quarantine {
			gone = append(gone, n)
		}
	}
	c.mu.Unlock()
	for _, n := range gone {
		// The cache may lag: only a live NotFound condemns the node's pods.
		if _, err := c.client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			continue
		}
		for _, p := range pods {
			if p.Spec.NodeName == n {
				c.delete(ctx, p, true, "PodGC: node no longer exists", ReasonOrphaned, fmt.Sprintf("Deleted: bound to node %s, which no longer exists", n))
			}
		}
	}
}

// collectUnscheduledTerminating forces out pods being deleted that were never scheduled. One held by
// finalizers is still marked Failed, as Kubernetes' PodGC does: its owner (a Job that replaces only
// failed pods, say) waits for that phase, which no kubelet will ever set; once it is Failed, the
// deletion already under way has nothing left to do until the finalizers go.
func (c *Controller) collectUnscheduledTerminating(ctx context.Context, pods []*corev1.Pod) {
	for _, p := range pods {
		if p.DeletionTimestamp != nil && p.Spec.NodeName == "" && (len(p.Finalizers) == 0 || !podstate.IsTerminal(p)) {
			c.delete(ctx, p, true, "", ReasonUnbound, "Deleted: being deleted and never scheduled, so no node will finish it")
		}
	}
}

// collectOutOfService force-deletes the terminating pods of nodes that are not Ready and carry the
// node.kubernetes.io/out-of-service taint: Kubernetes' non-graceful node shutdown, where an
// administrator vouches that the node is down, so that a StatefulSet's pod (and its volume) can
// start elsewhere without waiting for a kubelet that will not come back. The taint's NoExecute
// effect has the node lifecycle controller start the deletions.
func (c *Controller) collectOutOfService(ctx context.Context, pods []*corev1.Pod) {
	for _, p := range pods {
		if p.DeletionTimestamp == nil || p.Spec.NodeName == "" {
			continue
		}
		node, err := c.nodeLister.Get(p.Spec.NodeName)
		if err != nil || nodeReady(node) || !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeOutOfService }) {
			continue
		}
		c.delete(ctx, p, true, "", ReasonOutOfService, fmt.Sprintf("Deleted: terminating on node %s, which is out of service", node.Name))
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// delete removes a pod, at once (grace 0) when force is set since no kubelet will act on it. As
// Kubernetes' PodGC does, such a pod, unless finished, is first marked Failed, and DisruptionTarget
// with disruption as message when one is given, so its owner counts it as Kubernetes' would.
// Each try counts in pod_gc_collector_force_delete_pods_total and each failure in
// pod_gc_collector_force_delete_pod_errors_total, as Kubernetes counts them.
func (c *Controller) delete(ctx context.Context, p *corev1.Pod, force bool, disruption, reason, msg string) {
	forceDeletes.WithLabelValues(p.Namespace, metricReasons[reason]).Inc()
	failed := func(err error) {
		forceDeleteErrors.WithLabelValues(p.Namespace, metricReasons[reason]).Inc()
		c.log.Warn("pod garbage collection failed", "pod", p.Namespace+"/"+p.Name, "err", err)
	}
	uid := p.UID
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	if force {
		zero := int64(0)
		opts.GracePeriodSeconds = &zero
		condReason := ""
		if disruption != "" {
			condReason = "DeletionByPodGC"
		}
		if err := podstate.MarkDisrupted(ctx, c.client, p, fieldManager, condReason, disruption, true); err != nil {
			failed(err)
			return
		}
	}
	err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, opts)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return
	}
	if err != nil {
		failed(err)
		return
	}
	c.recorder.Event(p, corev1.EventTypeNormal, reason, msg)
	c.log.Info("garbage collected pod", "pod", p.Namespace+"/"+p.Name, "reason", reason)
}
