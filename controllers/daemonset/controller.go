package daemonset

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	"github.com/skiffkube/skiff/controllers/controllerref"
	"github.com/skiffkube/skiff/controllers/expectations"
	"github.com/skiffkube/skiff/controllers/revision"
	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs, events and the manager.
const Name = "daemonset-controller"

var controllerKind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// Options tune the controller; zero values mean the defaults.
type Options struct {
	Logger *slog.Logger
	Now    func() time.Time
}

// Controller reconciles DaemonSets.
type Controller struct {
	client     kubernetes.Interface
	dsLister   appslisters.DaemonSetLister
	revLister  appslisters.ControllerRevisionLister
	podLister  corelisters.PodLister
	nodeLister corelisters.NodeLister
	history    *revision.History
	synced     []cache.InformerSynced
	queue      runner.Queue
	exp        *expectations.Store
	recorder   record.EventRecorder
	log        *slog.Logger
	now        func() time.Time
	// failedBackoff spaces out replacing failed daemon pods, per node.
	failedBackoff *flowcontrol.Backoff
}

// Back-off between replacing a node's failed daemon pods (Kubernetes' values).
const (
	failedBackoffInitial = time.Second
	failedBackoffMax     = 15 * time.Minute
)

// nowClock is the real clock reading the time from now, so the back-off
// follows the controller's (in tests, fixed) time.
type nowClock struct {
	clock.RealClock
	now func() time.Time
}

func (c nowClock) Now() time.Time                  { return c.now() }
func (c nowClock) Since(t time.Time) time.Duration { return c.now().Sub(t) }

// New wires the controller to the informers. Call it before the informer factory is started.
func New(client kubernetes.Interface, dsInformer appsinformers.DaemonSetInformer, revInformer appsinformers.ControllerRevisionInformer,
	podInformer coreinformers.PodInformer, nodeInformer coreinformers.NodeInformer, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if client == nil || dsInformer == nil || revInformer == nil || podInformer == nil || nodeInformer == nil || recorder == nil {
		return nil, fmt.Errorf("daemonset: client, informers and recorder are required")
	}
	c := &Controller{
		client: client, dsLister: dsInformer.Lister(), revLister: revInformer.Lister(), podLister: podInformer.Lister(),
		nodeLister: nodeInformer.Lister(),
		history: &revision.History{Client: client, Lister: revInformer.Lister(), OwnerGVK: controllerKind,
			HashLabel: appsv1.DefaultDaemonSetUniqueLabelKey},
		synced: []cache.InformerSynced{dsInformer.Informer().HasSynced, revInformer.Informer().HasSynced,
			podInformer.Informer().HasSynced, nodeInformer.Informer().HasSynced},
		queue:    runner.NewQueue(Name),
		exp:      expectations.New(0, opts.Now),
		recorder: recorder, log: opts.Logger, now: opts.Now,
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.now == nil {
		c.now = time.Now
	}
	// "Fake" in client-go's name only means "on this clock".
	c.failedBackoff = flowcontrol.NewFakeBackOff(failedBackoffInitial, failedBackoffMax, nowClock{now: func() time.Time { return c.now() }})
	if _, err := dsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: c.dsUpdated,
		DeleteFunc: func(obj any) {
			if key, ok := runner.KeyOf(obj); ok {
				c.exp.Forget(key)
				c.queue.Add(key)
			}
		},
	}); err != nil {
		return nil, err
	}
	// As in Kubernetes, a revision's changes wake its DaemonSet (one deleted by hand is made
	// again), and an orphan's wake the DaemonSets that may adopt it.
	if _, err := revInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.revisionChanged,
		UpdateFunc: func(old, cur any) { c.revisionChanged(old); c.revisionChanged(cur) },
		DeleteFunc: c.revisionChanged,
	}); err != nil {
		return nil, err
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.podChanged(obj, true, false) },
		UpdateFunc: c.podUpdated,
		DeleteFunc: func(obj any) { c.podChanged(obj, false, true) },
	}); err != nil {
		return nil, err
	}
	if _, err := nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.nodeAdded,
		UpdateFunc: c.nodeUpdated,
		DeleteFunc: c.nodeDeleted,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run processes DaemonSets with the given number of workers until ctx ends.
// A DaemonSet whose sync fails (daemon pods refused by a quota or a webhook)
// is retried with backoff until it succeeds, as Kubernetes' DaemonSet
// controller retries it: no event is due to bring it back meanwhile.
func (c *Controller) Run(ctx context.Context, workers int) {
	go wait.Until(c.failedBackoff.GC, time.Minute, ctx.Done())
	runner.RunRetryingForever(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
}

func (c *Controller) enqueue(obj any) {
	if key, ok := runner.KeyOf(obj); ok {
		c.queue.Add(key)
	}
}

// dsUpdated enqueues the DaemonSet. One deleted and created again under its name, seen as a
// single update after a watch gap, starts without the old one's expectations, as in Kubernetes.
func (c *Controller) dsUpdated(old, cur any) {
	o, ok1 := old.(*appsv1.DaemonSet)
	n, ok2 := cur.(*appsv1.DaemonSet)
	if ok1 && ok2 && o.UID != n.UID {
		if key, ok := runner.KeyOf(o); ok {
			c.exp.Forget(key)
		}
	}
	c.enqueue(cur)
}

// enqueueWhere enqueues the DaemonSets for which concerned says yes.
func (c *Controller) enqueueWhere(concerned func(*appsv1.DaemonSet) bool) {
	all, err := c.dsLister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range all {
		if concerned(ds) {
			c.enqueue(ds)
		}
	}
}

// nodeAdded wakes the DaemonSets whose pod should run on a new node, as Kubernetes' addNode does.
func (c *Controller) nodeAdded(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	c.enqueueWhere(func(ds *appsv1.DaemonSet) bool {
		shouldRun, _ := placement(ds, node)
		return shouldRun
	})
}

// nodeUpdated wakes the DaemonSets whose placement on the node changed, as Kubernetes' updateNode
// does. Placement reads only a node's labels and taints, so other changes (status heartbeats above
// all) are ignored at once.
func (c *Controller) nodeUpdated(old, cur any) {
	o, ok1 := old.(*corev1.Node)
	n, ok2 := cur.(*corev1.Node)
	if !ok1 || !ok2 || (apiequality.Semantic.DeepEqual(o.Labels, n.Labels) && apiequality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints)) {
		return
	}
	c.enqueueWhere(func(ds *appsv1.DaemonSet) bool {
		oldRun, oldKeep := placement(ds, o)
		curRun, curKeep := placement(ds, n)
		return oldRun != curRun || oldKeep != curKeep
	})
}

// nodeDeleted wakes the DaemonSets a deleted node concerns: those whose pod belongs there, whose
// desired and scheduled counts drop, and those with a pod bound to it or meant for it (a pod not
// yet bound can never be scheduled now, and sync deletes it). Kubernetes registers no handler for
// node deletion and waits for PodGC's deletions or a resync; the others need no sync at all, so
// a node leaving a large cluster no longer wakes every DaemonSet.
func (c *Controller) nodeDeleted(obj any) {
	node, ok := runner.Object[*corev1.Node](obj)
	if !ok {
		return
	}
	withPods := c.daemonSetsWithPodsOn(node.Name)
	c.enqueueWhere(func(ds *appsv1.DaemonSet) bool {
		_, keep := placement(ds, node)
		return keep || withPods[ds.UID]
	})
}

// daemonSetsWithPodsOn returns the uids of the DaemonSets controlling a pod bound to, or meant for,
// the named node.
func (c *Controller) daemonSetsWithPodsOn(nodeName string) map[types.UID]bool {
	out := map[types.UID]bool{}
	pods, err := c.podLister.List(labels.Everything())
	if err != nil {
		return out
	}
	for _, p := range pods {
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.Kind == controllerKind.Kind && targetNode(p) == nodeName {
			out[ref.UID] = true
		}
	}
	return out
}

// dsOf returns the DaemonSet controlling pod, if it is in the cache with the same uid.
func (c *Controller) dsOf(pod *corev1.Pod) *appsv1.DaemonSet {
	ds, _ := controllerref.ControllerOf(pod, controllerKind, func(ns, name string) (*appsv1.DaemonSet, error) {
		return c.dsLister.DaemonSets(ns).Get(name)
	})
	return ds
}

// revisionChanged enqueues the DaemonSet controlling a ControllerRevision or, for an orphan,
// every DaemonSet selecting it.
func (c *Controller) revisionChanged(obj any) {
	rev, ok := runner.Object[*appsv1.ControllerRevision](obj)
	if !ok {
		return
	}
	if metav1.GetControllerOf(rev) != nil {
		ds, _ := controllerref.ControllerOf(rev, controllerKind, func(ns, name string) (*appsv1.DaemonSet, error) {
			return c.dsLister.DaemonSets(ns).Get(name)
		})
		if ds != nil {
			c.enqueue(ds)
		}
		return
	}
	for _, ds := range c.daemonSetsSelecting(rev.Namespace, rev.Labels) {
		c.enqueue(ds)
	}
}

// daemonSetsSelecting lists the DaemonSets whose selector matches an orphan's labels.
func (c *Controller) daemonSetsSelecting(namespace string, orphanLabels map[string]string) []*appsv1.DaemonSet {
	return controllerref.Selecting(c.dsLister.DaemonSets(namespace).List,
		func(ds *appsv1.DaemonSet) *metav1.LabelSelector { return ds.Spec.Selector }, orphanLabels)
}

// podUpdated wakes the pod's DaemonSet and, as in Kubernetes, the one it had before its
// controller reference changed, or, for an orphan whose labels or reference changed, every
// DaemonSet that selects it and may adopt it.
func (c *Controller) podUpdated(old, cur any) {
	oldPod, ok1 := old.(*corev1.Pod)
	curPod, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 || oldPod.ResourceVersion == curPod.ResourceVersion {
		return // periodic resync
	}
	oldRef, curRef := metav1.GetControllerOf(oldPod), metav1.GetControllerOf(curPod)
	refChanged := !apiequality.Semantic.DeepEqual(oldRef, curRef)
	if refChanged && oldRef != nil {
		if ds := c.dsOf(oldPod); ds != nil {
			c.enqueue(ds)
		}
	}
	if curRef == nil && curPod.DeletionTimestamp == nil {
		if refChanged || !labels.Equals(oldPod.Labels, curPod.Labels) {
			for _, ds := range c.daemonSetsSelecting(curPod.Namespace, curPod.Labels) {
				c.enqueue(ds)
			}
		}
		return
	}
	c.podChanged(curPod, false, false)
}

func (c *Controller) podChanged(obj any, added, deleted bool) {
	pod, ok := runner.Object[*corev1.Pod](obj)
	if !ok {
		return
	}
	ds := c.dsOf(pod)
	if ds == nil {
		// An orphan that appears may be adopted by a DaemonSet selecting it, as in Kubernetes.
		if added && pod.DeletionTimestamp == nil && metav1.GetControllerOf(pod) == nil {
			for _, ds := range c.daemonSetsSelecting(pod.Namespace, pod.Labels) {
				c.enqueue(ds)
			}
		}
		return
	}
	key := ds.Namespace + "/" + ds.Name
	switch {
	case deleted || pod.DeletionTimestamp != nil:
		c.exp.DeletionObserved(key, pod.Namespace+"/"+pod.Name)
	case added:
		c.exp.CreationObserved(key)
	}
	c.queue.Add(key)
	// A pod that just became ready turns available minReadySeconds later; nothing else will wake us.
	if ds.Spec.MinReadySeconds > 0 {
		c.queue.AddAfter(key, time.Duration(ds.Spec.MinReadySeconds)*time.Second+time.Second)
	}
}
