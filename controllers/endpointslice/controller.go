package endpointslice

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/expectations"
	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs, events and the manager.
const Name = "endpointslice-controller"

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
	triggers    *triggerTimes

	// written remembers the generation of each slice this controller last wrote, so a sync against a
	// cache that has not caught up waits instead of acting on stale slices.
	mu      sync.Mutex
	written map[types.UID]int64
}

// New wires the controller to the informers. Call it before the informer factory is started. Nodes are
// only read (an endpoint's zone, and whether its pod's node exists); as in Kubernetes, their changes
// do not queue Services.
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
		triggers:    newTriggerTimes(),
		written:     map[types.UID]int64{},
	}
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
		AddFunc: c.onPod,
		UpdateFunc: func(old, cur any) {
			c.onPod(cur)
			if !labels.Equals(old.(*corev1.Pod).Labels, cur.(*corev1.Pod).Labels) {
				c.onPod(old)
			}
		},
		DeleteFunc: c.onPod,
	}); err != nil {
		return nil, err
	}
	if _, err := sliceInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onSlice(obj, "add") },
		UpdateFunc: func(_, cur any) { c.onSlice(cur, "update") },
		DeleteFunc: func(obj any) { c.onSlice(obj, "delete") },
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run processes Services with the given number of workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	runner.Run(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
}

func (c *Controller) enqueue(obj any) {
	if key, ok := runner.KeyOf(obj); ok {
		c.queue.Add(key)
	}
}

func (c *Controller) onPod(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	svcs, err := c.svcLister.Services(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, s := range svcs {
		if s.Spec.Selector != nil && labels.SelectorFromValidatedSet(s.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			c.enqueue(s)
		}
	}
}

func (c *Controller) onSlice(obj any, verb string) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok || s.Labels[discoveryv1.LabelManagedBy] != ControllerName {
		return
	}
	svc := s.Labels[discoveryv1.LabelServiceName]
	if svc == "" {
		return
	}
	key := s.Namespace + "/" + svc
	switch verb {
	case "add":
		c.exp.CreationObserved(key)
	case "delete":
		c.exp.DeletionObserved(key, s.Namespace+"/"+s.Name)
		c.mu.Lock()
		delete(c.written, s.UID)
		c.mu.Unlock()
	}
	c.queue.Add(key)
}

func metaOwner(svc *corev1.Service) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID, Controller: &yes, BlockOwnerDeletion: &yes}
}
