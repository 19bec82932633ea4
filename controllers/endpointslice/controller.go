package endpointslice

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/expectations"
	"github.com/skiffkube/skiff/controllers/podservices"
	"github.com/skiffkube/skiff/controllers/runner"
	"github.com/skiffkube/skiff/controllers/triggertime"
)

// Name is the controller's name in logs and the manager.
const Name = "endpointslice-controller"

// EventSource is the component its Events come from, as kube-controller-manager
// names it (the From column of `kubectl describe`).
const EventSource = "endpoint-slice-controller"

// ControllerName is the managed-by label value, the same as Kubernetes' so tools recognise the slices.
const ControllerName = "endpointslice-controller.k8s.io"

// MaxEndpointsPerSlice is Kubernetes' default.
const MaxEndpointsPerSlice = 100

// Options tune the controller; zero values mean the defaults.
type Options struct {
	Logger               *slog.Logger
	MaxEndpointsPerSlice int
}

// Controller reconciles the EndpointSlices of Services.
type Controller struct {
	client      kubernetes.Interface
	svcLister   corelisters.ServiceLister
	podLister   corelisters.PodLister
	nodeLister  corelisters.NodeLister
	sliceLister discoverylisters.EndpointSliceLister
	synced      []cache.InformerSynced
	queue       runner.Queue
	exp         *expectations.Store
	recorder    record.EventRecorder
	log         *slog.Logger
	maxPer      int
	triggers    *triggertime.Tracker

	// topology holds the zones' CPU shares and the hints given for Topology Aware Routing; node
	// changes go through topologyQueue, one worker recomputing the shares for them all.
	topology      *topology
	topologyQueue runner.Queue

	// written remembers the generation of each slice this controller last wrote (deletionExpected for
	// one it deleted), as Kubernetes' EndpointSliceTracker: a sync against a cache that has not caught
	// up waits instead of acting on stale slices, and the informer events of its own writes do not
	// queue the Service again.
	mu      sync.Mutex
	written map[types.UID]int64
}

// deletionExpected marks, in Controller.written, a slice this controller deleted.
const deletionExpected int64 = -1

// topologyQueueName names the queue of node changes, whose one key recomputes the zones' CPU shares.
const topologyQueueName = "endpointslice_topology"

// New wires the controller to the informers. Call it before the informer factory is started. Nodes
// give an endpoint its zone and say whether its pod's node exists; as in Kubernetes, their changes
// queue only the Services whose Topology Aware Routing hints they overload.
func New(client kubernetes.Interface, svcInformer coreinformers.ServiceInformer, podInformer coreinformers.PodInformer, nodeInformer coreinformers.NodeInformer, sliceInformer discoveryinformers.EndpointSliceInformer, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if client == nil || svcInformer == nil || podInformer == nil || nodeInformer == nil || sliceInformer == nil || recorder == nil {
		return nil, fmt.Errorf("endpointslice: client, informers and recorder are required")
	}
	c := &Controller{
		client:      client,
		svcLister:   svcInformer.Lister(),
		podLister:   podInformer.Lister(),
		nodeLister:  nodeInformer.Lister(),
		sliceLister: sliceInformer.Lister(),
		synced:      []cache.InformerSynced{svcInformer.Informer().HasSynced, podInformer.Informer().HasSynced, nodeInformer.Informer().HasSynced, sliceInformer.Informer().HasSynced},
		queue:       runner.NewQueue(Name),
		exp:         expectations.New(0, nil),
		recorder:    recorder,
		log:         opts.Logger,
		maxPer:      opts.MaxEndpointsPerSlice,
		triggers:    triggertime.New(),
		written:     map[types.UID]int64{},
		topology:    newTopology(),
	}
	c.topologyQueue = runner.NewQueue(topologyQueueName)
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.maxPer <= 0 {
		c.maxPer = MaxEndpointsPerSlice
	}
	if _, err := svcInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, cur any) { c.enqueue(cur) },
		DeleteFunc: c.enqueue,
	}); err != nil {
		return nil, err
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onPod,
		UpdateFunc: c.onPodUpdate,
		DeleteFunc: c.onPod,
	}); err != nil {
		return nil, err
	}
	if _, err := nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onNodeAdd,
		UpdateFunc: c.onNodeUpdate,
		DeleteFunc: c.onNodeDelete,
	}); err != nil {
		return nil, err
	}
	if _, err := sliceInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onSliceAdd,
		UpdateFunc: c.onSliceUpdate,
		DeleteFunc: c.onSliceDelete,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run processes Services with the given number of workers, and node changes with one, until ctx
// ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	// The zones' shares first: a Service asking for Topology Aware Routing
	// synced before them would lose its hints ("Insufficient Node
	// information"), and nothing would queue it again until one of its
	// pods changed.
	if cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		if err := c.syncTopology(ctx, topologyKey); err != nil {
			c.topologyQueue.Add(topologyKey)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { runner.Run(ctx, topologyQueueName, c.topologyQueue, 1, c.syncTopology, c.log, c.synced...) })
	runner.Run(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
	wg.Wait()
}

func (c *Controller) enqueue(obj any) {
	if key, ok := runner.KeyOf(obj); ok {
		c.queue.Add(key)
	}
}

// onPod queues the Services that select a pod come or gone.
func (c *Controller) onPod(obj any) {
	pod, ok := runner.Object[*corev1.Pod](obj)
	if !ok {
		return
	}
	for _, key := range podservices.Selecting(c.svcLister, pod.Namespace, pod.Labels) {
		c.queue.Add(key)
	}
}

// onPodUpdate queues, as Kubernetes does, only for a change that can alter endpoints: the Services
// selecting the pod when its endpoint changed, and those that start or stop selecting it when its
// labels (or hostname and subdomain) changed. Resyncs, and status changes such as a container
// restart that leave the endpoint as it was, queue nothing.
func (c *Controller) onPodUpdate(old, cur any) {
	prev, ok1 := old.(*corev1.Pod)
	pod, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 {
		return
	}
	for _, key := range podservices.ToUpdate(c.svcLister, prev, pod) {
		c.queue.Add(key)
	}
}

// sliceService is the key of the Service a slice is labelled for, "" if none.
func sliceService(s *discoveryv1.EndpointSlice) string {
	if svc := s.Labels[discoveryv1.LabelServiceName]; svc != "" {
		return s.Namespace + "/" + svc
	}
	return ""
}

func managedByUs(s *discoveryv1.EndpointSlice) bool {
	return s.Labels[discoveryv1.LabelManagedBy] == ControllerName
}

func (c *Controller) enqueueForSlice(s *discoveryv1.EndpointSlice) {
	if key := sliceService(s); key != "" {
		c.queue.Add(key)
	}
}

// shouldSync is false for a slice version this controller wrote itself, as Kubernetes'
// EndpointSliceTracker.ShouldSync.
func (c *Controller) shouldSync(s *discoveryv1.EndpointSlice) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.written[s.UID]
	return !ok || s.Generation > g
}

// onSliceAdd queues the Service of a slice of ours unless this controller created it.
func (c *Controller) onSliceAdd(obj any) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok || !managedByUs(s) || sliceService(s) == "" {
		return
	}
	c.exp.CreationObserved(sliceService(s))
	if c.shouldSync(s) {
		c.enqueueForSlice(s)
	}
}

// onSliceUpdate queues, as Kubernetes does, for a slice of ours changed by someone else, a slice
// moving to or from our management, or one relabelled to another Service (both Services).
func (c *Controller) onSliceUpdate(old, cur any) {
	prev, ok1 := old.(*discoveryv1.EndpointSlice)
	s, ok2 := cur.(*discoveryv1.EndpointSlice)
	if !ok1 || !ok2 {
		return
	}
	if sliceService(s) != sliceService(prev) {
		c.enqueueForSlice(s)
		c.enqueueForSlice(prev)
		return
	}
	if managedByUs(s) != managedByUs(prev) || (managedByUs(s) && c.shouldSync(s)) {
		c.enqueueForSlice(s)
	}
}

// onSliceDelete queues the Service of a slice of ours that someone else deleted. Unlike Kubernetes',
// whose EndpointSliceTracker only queues for slices it has written itself (Has), this includes
// slices this process never wrote, such as those written before a restart: their endpoints would
// otherwise stay missing until something else syncs the Service (for Kubernetes, an informer
// resync hours later). The cost is one sync, a no-op once the Service is gone.
func (c *Controller) onSliceDelete(obj any) {
	s, ok := runner.Object[*discoveryv1.EndpointSlice](obj)
	if !ok || !managedByUs(s) || sliceService(s) == "" {
		return
	}
	c.exp.DeletionObserved(sliceService(s), s.Namespace+"/"+s.Name)
	c.mu.Lock()
	ours := c.written[s.UID] == deletionExpected
	delete(c.written, s.UID)
	c.mu.Unlock()
	if !ours {
		c.enqueueForSlice(s)
	}
}

func metaOwner(svc *corev1.Service) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID, Controller: &yes, BlockOwnerDeletion: &yes}
}
