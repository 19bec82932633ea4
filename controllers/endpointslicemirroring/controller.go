package endpointslicemirroring

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs and the manager: kube-controller-manager's.
const Name = "endpointslice-mirroring-controller"

// EventSource is the component its Events come from, as kube-controller-manager
// names it (the From column of `kubectl describe`).
const EventSource = "endpoint-slice-mirroring-controller"

// ControllerName is the managed-by label value of the mirrored slices, Kubernetes' own.
const ControllerName = "endpointslicemirroring-controller.k8s.io"

// MaxEndpointsPerSubset is how many addresses of one Endpoints subset are mirrored, as
// kube-controller-manager's --mirroring-max-endpoints-per-subset default.
const MaxEndpointsPerSubset = 1000

// Event reasons, Kubernetes'.
const (
	// InvalidIPAddress: some addresses of the Endpoints are not IPs and were left out.
	InvalidIPAddress = "InvalidIPAddress"
	// TooManyAddressesToMirror: a subset held more than MaxEndpointsPerSubset addresses.
	TooManyAddressesToMirror = "TooManyAddressesToMirror"
)

// Options tune the controller; zero values mean the defaults.
type Options struct {
	Logger                *slog.Logger
	MaxEndpointsPerSubset int
}

// Controller mirrors the Endpoints of selector-less Services into EndpointSlices.
type Controller struct {
	client      kubernetes.Interface
	svcLister   corelisters.ServiceLister
	epLister    corelisters.EndpointsLister
	sliceLister discoverylisters.EndpointSliceLister
	synced      []cache.InformerSynced
	queue       runner.Queue
	recorder    record.EventRecorder
	log         *slog.Logger
	maxPer      int
	tracker     *tracker
}

// New wires the controller to the informers. Call it before the informer factory is started.
func New(client kubernetes.Interface, svcInformer coreinformers.ServiceInformer, epInformer coreinformers.EndpointsInformer,
	sliceInformer discoveryinformers.EndpointSliceInformer, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if client == nil || svcInformer == nil || epInformer == nil || sliceInformer == nil || recorder == nil {
		return nil, fmt.Errorf("endpointslicemirroring: client, informers and recorder are required")
	}
	c := &Controller{
		client:      client,
		svcLister:   svcInformer.Lister(),
		epLister:    epInformer.Lister(),
		sliceLister: sliceInformer.Lister(),
		synced:      []cache.InformerSynced{svcInformer.Informer().HasSynced, epInformer.Informer().HasSynced, sliceInformer.Informer().HasSynced},
		queue:       runner.NewQueue(Name),
		recorder:    recorder,
		log:         opts.Logger,
		maxPer:      opts.MaxEndpointsPerSubset,
		tracker:     newTracker(time.Now),
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.maxPer <= 0 {
		c.maxPer = MaxEndpointsPerSubset
	}
	if _, err := svcInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.onService(nil, obj) },
		UpdateFunc: func(old, cur any) {
			c.onService(old, cur)
		},
		DeleteFunc: func(obj any) { c.onService(nil, obj) },
	}); err != nil {
		return nil, err
	}
	if _, err := epInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onEndpoints(nil, obj) },
		UpdateFunc: c.onEndpoints,
		DeleteFunc: func(obj any) { c.onEndpoints(nil, obj) },
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

// Run processes Endpoints, keyed by their Service's namespace/name, with the given number of
// workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	runner.Run(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
}

func (c *Controller) enqueue(obj any) {
	if key, ok := runner.KeyOf(obj); ok {
		c.queue.Add(key)
	}
}

// onService: only a Service without a selector has its Endpoints mirrored, so only such a
// Service's arrival or departure, or a selector coming or going, matters.
func (c *Controller) onService(old, cur any) {
	svc, ok := runner.Object[*corev1.Service](cur)
	if !ok {
		return
	}
	if old == nil {
		if svc.Spec.Selector == nil {
			c.enqueue(cur)
		}
		return
	}
	prev, ok := old.(*corev1.Service)
	if !ok || (prev.Spec.Selector == nil) != (svc.Spec.Selector == nil) {
		c.enqueue(cur)
	}
}

// onEndpoints: an Endpoints object is looked at when it is (or, for an update, was) one to mirror.
func (c *Controller) onEndpoints(old, cur any) {
	ep, ok := runner.Object[*corev1.Endpoints](cur)
	if !ok {
		return
	}
	if shouldMirror(ep) {
		c.enqueue(cur)
		return
	}
	if prev, ok := old.(*corev1.Endpoints); ok && shouldMirror(prev) {
		c.enqueue(cur)
	}
}

func (c *Controller) enqueueForSlice(s *discoveryv1.EndpointSlice) {
	if svc := s.Labels[discoveryv1.LabelServiceName]; svc != "" {
		c.queue.Add(s.Namespace + "/" + svc)
	}
}

// onSliceAdd: a slice of ours we did not write (or not in this version) needs a look.
func (c *Controller) onSliceAdd(obj any) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if ok && managedByUs(s) && c.tracker.shouldSync(s) {
		c.enqueueForSlice(s)
	}
}

// onSliceUpdate: besides changes to our slices by others, a slice moving to or from our
// management, or to another Service, brings its Services back.
func (c *Controller) onSliceUpdate(old, cur any) {
	s, ok := cur.(*discoveryv1.EndpointSlice)
	prev, ok2 := old.(*discoveryv1.EndpointSlice)
	if !ok || !ok2 {
		return
	}
	if s.Labels[discoveryv1.LabelServiceName] != prev.Labels[discoveryv1.LabelServiceName] {
		c.enqueueForSlice(s)
		c.enqueueForSlice(prev)
		return
	}
	if managedByUs(s) != managedByUs(prev) || (managedByUs(s) && c.tracker.shouldSync(s)) {
		c.enqueueForSlice(s)
	}
}

// onSliceDelete: a slice of ours deleted by someone else is put back.
func (c *Controller) onSliceDelete(obj any) {
	s, ok := runner.Object[*discoveryv1.EndpointSlice](obj)
	if ok && managedByUs(s) && !c.tracker.deleted(s) {
		c.enqueueForSlice(s)
	}
}

// shouldMirror is false for Endpoints that say they are not to be mirrored, as Kubernetes': the
// skip-mirror label, or a leader-election record kept in an Endpoints annotation.
func shouldMirror(ep *corev1.Endpoints) bool {
	if ep == nil || ep.Labels[discoveryv1.LabelSkipMirror] == "true" {
		return false
	}
	_, leader := ep.Annotations[resourcelock.LeaderElectionRecordAnnotationKey]
	return !leader
}

func managedByUs(s *discoveryv1.EndpointSlice) bool {
	return s.Labels[discoveryv1.LabelManagedBy] == ControllerName
}
