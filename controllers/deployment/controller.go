package deployment

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllerref"
	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs, events and the manager.
const Name = "deployment-controller"

var (
	controllerKind = appsv1.SchemeGroupVersion.WithKind("Deployment")
	rsKind         = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
)

// extensionsGroup served Deployments before apps did; old ownerReferences still name it.
const extensionsGroup = "extensions"

// Options tune the controller; zero values mean the defaults.
type Options struct {
	Logger *slog.Logger
	// Now is the clock for progress deadlines; tests pin it.
	Now func() time.Time
}

// Controller reconciles Deployments.
type Controller struct {
	client    kubernetes.Interface
	dLister   appslisters.DeploymentLister
	rsLister  appslisters.ReplicaSetLister
	podLister corelisters.PodLister
	synced    []cache.InformerSynced
	queue     runner.Queue
	recorder  record.EventRecorder
	log       *slog.Logger
	now       func() time.Time
}

// New wires the controller to the informers. Call it before the informer factory is started.
func New(client kubernetes.Interface, dInformer appsinformers.DeploymentInformer, rsInformer appsinformers.ReplicaSetInformer, podInformer coreinformers.PodInformer, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if client == nil || dInformer == nil || rsInformer == nil || podInformer == nil || recorder == nil {
		return nil, fmt.Errorf("deployment: client, informers and recorder are required")
	}
	c := &Controller{
		client:    client,
		dLister:   dInformer.Lister(),
		rsLister:  rsInformer.Lister(),
		podLister: podInformer.Lister(),
		synced:    []cache.InformerSynced{dInformer.Informer().HasSynced, rsInformer.Informer().HasSynced, podInformer.Informer().HasSynced},
		queue:     runner.NewQueue(Name),
		recorder:  recorder,
		log:       opts.Logger,
		now:       opts.Now,
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.now == nil {
		c.now = time.Now
	}
	if _, err := dInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, cur any) { c.enqueue(cur) },
		DeleteFunc: c.enqueue,
	}); err != nil {
		return nil, err
	}
	if _, err := rsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onReplicaSet,
		UpdateFunc: func(old, cur any) { c.onReplicaSet(old); c.onReplicaSet(cur) },
		DeleteFunc: c.onReplicaSet,
	}); err != nil {
		return nil, err
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: c.onPodDeleted,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run processes Deployments with the given number of workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	runner.Run(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
}

func (c *Controller) enqueue(obj any) {
	if key, ok := runner.KeyOf(obj); ok {
		c.queue.Add(key)
	}
}

func unwrap[T any](obj any) (T, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	v, ok := obj.(T)
	return v, ok
}

// onReplicaSet enqueues the owning Deployment, or every Deployment that could adopt an orphan.
func (c *Controller) onReplicaSet(obj any) {
	rs, ok := unwrap[*appsv1.ReplicaSet](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		if d := c.resolveControllerRef(rs.Namespace, ref); d != nil {
			c.enqueue(d)
		}
		return
	}
	adopters := controllerref.Selecting(c.dLister.Deployments(rs.Namespace).List,
		func(d *appsv1.Deployment) *metav1.LabelSelector { return d.Spec.Selector }, rs.Labels)
	for _, d := range adopters {
		c.enqueue(d)
	}
}

// onPodDeleted matters only to Recreate, which waits for the old pods to be gone.
func (c *Controller) onPodDeleted(obj any) {
	pod, ok := unwrap[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != rsKind.Kind {
		return
	}
	rs, err := c.rsLister.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return
	}
	if dref := metav1.GetControllerOf(rs); dref != nil {
		if d := c.resolveControllerRef(rs.Namespace, dref); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
			c.enqueue(d)
		}
	}
}

// resolveControllerRef returns the Deployment a controllerRef names, if it is the one in the cache (same
// uid). ReplicaSets created through extensions/v1beta1 or apps/v1beta1/v1beta2 still carry that
// apiVersion in their ownerReference, so any version of the apps or extensions group will do.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.Deployment {
	if ref.Kind != controllerKind.Kind {
		return nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || (gv.Group != appsv1.GroupName && gv.Group != extensionsGroup) {
		return nil
	}
	d, err := c.dLister.Deployments(namespace).Get(ref.Name)
	if err != nil || d.UID != ref.UID {
		return nil
	}
	return d
}
