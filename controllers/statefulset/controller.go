package statefulset

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	"github.com/skiffkube/skiff/controllers/revision"
	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs, events and the manager.
const Name = "statefulset-controller"

var controllerKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// Options tune the controller; zero values mean the defaults.
type Options struct {
	Logger *slog.Logger
	Now    func() time.Time
}

// Controller reconciles StatefulSets.
type Controller struct {
	client    kubernetes.Interface
	setLister appslisters.StatefulSetLister
	podLister corelisters.PodLister
	// claimLister reads the claims whose owners carry out the
	// persistentVolumeClaimRetentionPolicy.
	claimLister corelisters.PersistentVolumeClaimLister
	history     *revision.History
	synced      []cache.InformerSynced
	queue       runner.Queue
	exp         *expectations.Store
	recorder    record.EventRecorder
	log         *slog.Logger
	now         func() time.Time
}

// New wires the controller to the informers. Call it before the informer factory is started.
func New(client kubernetes.Interface, setInformer appsinformers.StatefulSetInformer, revInformer appsinformers.ControllerRevisionInformer,
	podInformer coreinformers.PodInformer, claimInformer coreinformers.PersistentVolumeClaimInformer, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if client == nil || setInformer == nil || revInformer == nil || podInformer == nil || claimInformer == nil || recorder == nil {
		return nil, fmt.Errorf("statefulset: client, informers and recorder are required")
	}
	c := &Controller{
		client: client, setLister: setInformer.Lister(), podLister: podInformer.Lister(), claimLister: claimInformer.Lister(),
		history: &revision.History{Client: client, Lister: revInformer.Lister(), OwnerGVK: controllerKind,
			HashLabel: appsv1.ControllerRevisionHashLabelKey},
		synced: []cache.InformerSynced{setInformer.Informer().HasSynced, revInformer.Informer().HasSynced, podInformer.Informer().HasSynced,
			claimInformer.Informer().HasSynced},
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
	if _, err := setInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, cur any) { c.enqueue(cur) },
		DeleteFunc: func(obj any) {
			if key, ok := runner.KeyOf(obj); ok {
				c.exp.Forget(key)
				c.queue.Add(key)
			}
		},
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
	return c, nil
}

// Run processes StatefulSets with the given number of workers until ctx ends.
// A set whose sync fails (a pod or claim create refused) is retried with
// backoff until it succeeds, as Kubernetes' StatefulSet controller retries it.
func (c *Controller) Run(ctx context.Context, workers int) {
	runner.RunRetryingForever(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
}

func (c *Controller) enqueue(obj any) {
	if key, ok := runner.KeyOf(obj); ok {
		c.queue.Add(key)
	}
}

func (c *Controller) setOf(pod *corev1.Pod) *appsv1.StatefulSet {
	set, _ := controllerref.ControllerOf(pod, controllerKind, func(ns, name string) (*appsv1.StatefulSet, error) {
		return c.setLister.StatefulSets(ns).Get(name)
	})
	return set
}

// podUpdated wakes the pod's set and, as Kubernetes' updatePod does, the set
// that controlled it before its controller reference changed (released, or
// taken over by another owner), so that set counts it out now rather than
// at its next resync.
func (c *Controller) podUpdated(old, cur any) {
	oldPod, ok1 := runner.Object[*corev1.Pod](old)
	curPod, ok2 := runner.Object[*corev1.Pod](cur)
	if !ok1 || !ok2 {
		c.podChanged(cur, false, false)
		return
	}
	if oldPod.ResourceVersion == curPod.ResourceVersion {
		return // a resync: nothing changed, as Kubernetes' updatePod skips it
	}
	oldRef := metav1.GetControllerOfNoCopy(oldPod)
	if curRef := metav1.GetControllerOfNoCopy(curPod); oldRef != nil && (curRef == nil || curRef.UID != oldRef.UID) {
		if set := c.setOf(oldPod); set != nil {
			c.queue.Add(set.Namespace + "/" + set.Name)
		}
	}
	set := c.podChanged(curPod, false, false)
	// A pod that just became ready turns available minReadySeconds later, with no event then:
	// look again at that time, as Kubernetes' updatePod does (a second more, against clock
	// rounding). Other pod events need no such look: nothing about them ripens with time.
	if set != nil && set.Spec.MinReadySeconds > 0 && !podstate.IsReady(oldPod) && podstate.IsReady(curPod) {
		c.queue.AddAfter(set.Namespace+"/"+set.Name, time.Duration(set.Spec.MinReadySeconds)*time.Second+time.Second)
	}
}

// podChanged queues the set controlling the pod, if any, and returns it.
func (c *Controller) podChanged(obj any, added, deleted bool) *appsv1.StatefulSet {
	pod, ok := runner.Object[*corev1.Pod](obj)
	if !ok {
		return nil
	}
	set := c.setOf(pod)
	if set == nil {
		if !deleted && pod.DeletionTimestamp == nil && metav1.GetControllerOfNoCopy(pod) == nil {
			c.enqueueAdopters(pod)
		}
		return nil
	}
	key := set.Namespace + "/" + set.Name
	switch {
	case deleted || pod.DeletionTimestamp != nil:
		c.exp.DeletionObserved(key, pod.Namespace+"/"+pod.Name)
	case added:
		c.exp.CreationObserved(key)
	}
	c.queue.Add(key)
	return set
}

// enqueueAdopters queues the sets whose selector matches an orphan pod, as Kubernetes
// does, so one that may adopt it (a set made again after --cascade=orphan, a pod
// relabelled back) does so now rather than at the next resync.
func (c *Controller) enqueueAdopters(pod *corev1.Pod) {
	sets := controllerref.Selecting(c.setLister.StatefulSets(pod.Namespace).List,
		func(set *appsv1.StatefulSet) *metav1.LabelSelector { return set.Spec.Selector }, pod.Labels)
	for _, set := range sets {
		if isMember(set, pod) {
			c.queue.Add(set.Namespace + "/" + set.Name)
		}
	}
}
