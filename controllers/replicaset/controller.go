package replicaset

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllerref"
	"github.com/skiffkube/skiff/controllers/expectations"
	"github.com/skiffkube/skiff/controllers/podstate"
	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs, events and the manager.
const Name = "replicaset-controller"

// DefaultBurstReplicas caps the creates or deletes one sync issues, as in Kubernetes.
const DefaultBurstReplicas = 500

var controllerKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// Options tune the controller; zero values mean the defaults.
type Options struct {
	BurstReplicas int
	Logger        *slog.Logger
	// Now is the clock used for availability (minReadySeconds); tests pin it.
	Now func() time.Time
	// Kind is the kind the informer's ReplicaSets stand for, which the controller names in the
	// owner references it writes and follows; Name names its queue and logs; ReplicaSets reads
	// and writes those objects through the API server. Zero: apps/v1 ReplicaSet, Name and the
	// client's AppsV1().ReplicaSets. The replication package sets them to drive this controller
	// with ReplicationControllers seen as ReplicaSets, as Kubernetes' replication manager drives
	// its ReplicaSet controller.
	Kind        schema.GroupVersionKind
	Name        string
	ReplicaSets func(namespace string) Client
}

// Client is what the controller asks of the API server about the objects it manages: a fresh copy
// (before adopting a pod, after a status conflict) and a status write.
type Client interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*appsv1.ReplicaSet, error)
	UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet, opts metav1.UpdateOptions) (*appsv1.ReplicaSet, error)
}

// Controller reconciles ReplicaSets.
type Controller struct {
	client    kubernetes.Interface
	rsLister  appslisters.ReplicaSetLister
	podLister corelisters.PodLister
	synced    []cache.InformerSynced
	queue     runner.Queue
	exp       *expectations.Store
	recorder  record.EventRecorder
	log       *slog.Logger
	now       func() time.Time
	burst     int
	kind      schema.GroupVersionKind
	name      string
	rsClient  func(namespace string) Client
}

// New wires the controller to the informers. Call it before the informer factory is started.
func New(client kubernetes.Interface, rsInformer appsinformers.ReplicaSetInformer, podInformer coreinformers.PodInformer, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if client == nil || rsInformer == nil || podInformer == nil || recorder == nil {
		return nil, fmt.Errorf("replicaset: client, informers and recorder are required")
	}
	if opts.Kind.Empty() {
		opts.Kind = controllerKind
	}
	if opts.Name == "" {
		opts.Name = Name
	}
	c := &Controller{
		client:    client,
		rsLister:  rsInformer.Lister(),
		podLister: podInformer.Lister(),
		synced:    []cache.InformerSynced{rsInformer.Informer().HasSynced, podInformer.Informer().HasSynced},
		queue:     runner.NewQueue(opts.Name),
		exp:       expectations.New(0, opts.Now),
		recorder:  recorder,
		log:       opts.Logger,
		now:       opts.Now,
		burst:     opts.BurstReplicas,
		kind:      opts.Kind,
		name:      opts.Name,
		rsClient:  opts.ReplicaSets,
	}
	if c.rsClient == nil {
		c.rsClient = func(namespace string) Client { return client.AppsV1().ReplicaSets(namespace) }
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.burst <= 0 {
		c.burst = DefaultBurstReplicas
	}
	if _, err := rsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: c.updateRS,
		DeleteFunc: c.deleteRS,
	}); err != nil {
		return nil, err
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run processes ReplicaSets with the given number of workers until ctx ends.
// A ReplicaSet whose sync fails (pod creates refused by a quota, a webhook or
// an overloaded API server) is retried with backoff until it succeeds, as
// Kubernetes' ReplicaSet controller and replication manager retry it: no
// event is due to bring it back, since nothing about it or its pods changes.
func (c *Controller) Run(ctx context.Context, workers int) {
	runner.RunRetryingForever(ctx, c.name, c.queue, workers, c.sync, c.log, c.synced...)
}

func (c *Controller) enqueue(obj any) {
	if key, ok := runner.KeyOf(obj); ok {
		c.queue.Add(key)
	}
}

func (c *Controller) updateRS(old, cur any) {
	oldRS, curRS := old.(*appsv1.ReplicaSet), cur.(*appsv1.ReplicaSet)
	if oldRS.UID != curRS.UID {
		// Deleted and created again under the same name, seen as an update (a relist after a missed
		// delete): the old one's expectations must not hold the new one back.
		c.deleteRS(oldRS)
	}
	c.enqueue(curRS)
}

func (c *Controller) deleteRS(obj any) {
	if key, ok := runner.KeyOf(obj); ok {
		c.exp.Forget(key)
		c.queue.Add(key)
	}
}

// resolveControllerRef returns the ReplicaSet a controller reference points at, if it is in the cache
// with the same uid. As in Kubernetes only the kind is checked, not the apiVersion: the uid identifies
// the object, and references written through an older version (extensions/v1beta1) stay valid.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	if ref == nil || ref.Kind != c.kind.Kind {
		return nil
	}
	rs, err := c.rsLister.ReplicaSets(namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil
	}
	return rs
}

// replicaSetsSelecting lists the ReplicaSets whose selector matches an orphan pod's labels.
func (c *Controller) replicaSetsSelecting(pod *corev1.Pod) []*appsv1.ReplicaSet {
	return controllerref.Selecting(c.rsLister.ReplicaSets(pod.Namespace).List,
		func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector }, pod.Labels)
}

func (c *Controller) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		// Seen for the first time already dying (e.g. after a restart): a deletion, not a creation.
		c.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if rs := c.resolveControllerRef(pod.Namespace, ref); rs != nil {
			key := rs.Namespace + "/" + rs.Name
			c.exp.CreationObserved(key)
			c.queue.Add(key)
		}
		return
	}
	for _, rs := range c.replicaSetsSelecting(pod) {
		c.enqueue(rs)
	}
}

func (c *Controller) updatePod(old, cur any) {
	oldPod, curPod := old.(*corev1.Pod), cur.(*corev1.Pod)
	if oldPod.ResourceVersion == curPod.ResourceVersion {
		return // periodic resync
	}
	labelsChanged := !labels.Equals(oldPod.Labels, curPod.Labels)
	if curPod.DeletionTimestamp != nil {
		c.deletePod(curPod)
		if labelsChanged {
			c.deletePod(oldPod)
		}
		return
	}
	oldRef, curRef := metav1.GetControllerOf(oldPod), metav1.GetControllerOf(curPod)
	refChanged := (oldRef == nil) != (curRef == nil) || (oldRef != nil && curRef != nil && oldRef.UID != curRef.UID)
	if refChanged && oldRef != nil {
		if rs := c.resolveControllerRef(oldPod.Namespace, oldRef); rs != nil {
			c.enqueue(rs)
		}
	}
	if curRef != nil {
		rs := c.resolveControllerRef(curPod.Namespace, curRef)
		if rs == nil {
			return
		}
		c.enqueue(rs)
		// A pod that just became ready turns available minReadySeconds later; nothing else will wake us.
		if !podstate.IsReady(oldPod) && podstate.IsReady(curPod) && rs.Spec.MinReadySeconds > 0 {
			c.queue.AddAfter(rs.Namespace+"/"+rs.Name, time.Duration(rs.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if labelsChanged || refChanged {
		for _, rs := range c.replicaSetsSelecting(curPod) {
			c.enqueue(rs)
		}
	}
}

func (c *Controller) deletePod(obj any) {
	pod, ok := runner.Object[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return
	}
	rs := c.resolveControllerRef(pod.Namespace, ref)
	if rs == nil {
		return
	}
	key := rs.Namespace + "/" + rs.Name
	c.exp.DeletionObserved(key, pod.Namespace+"/"+pod.Name)
	c.queue.Add(key)
}

// isNamespaceTerminating reports whether a create failed only because the namespace is being deleted;
// such failures are expected and not worth an error event or a retry.
func isNamespaceTerminating(err error) bool {
	return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}
