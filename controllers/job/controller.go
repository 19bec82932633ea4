package job

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllerref"
	"github.com/skiffkube/skiff/controllers/expectations"
	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs, events and the manager.
const Name = "job-controller"

// Back-off before a failed pod is replaced: DefaultBackoff doubled per failure, capped at MaxBackoff
// (Kubernetes' values: DefaultJobPodFailureBackOff and MaxJobPodFailureBackOff, 10 minutes since v1.28).
const (
	DefaultBackoff = 10 * time.Second
	MaxBackoff     = 10 * time.Minute
)

var controllerKind = batchv1.SchemeGroupVersion.WithKind("Job")

// orphanPrefix marks queue keys that name a pod (whose Job is gone) rather than a Job.
const orphanPrefix = "pod:"

// Options tune the controller; zero values mean the defaults.
type Options struct {
	Logger  *slog.Logger
	Backoff time.Duration
	Now     func() time.Time
}

// Controller reconciles Jobs.
type Controller struct {
	client    kubernetes.Interface
	jobLister batchlisters.JobLister
	podLister corelisters.PodLister
	synced    []cache.InformerSynced
	queue     runner.Queue
	exp       *expectations.Store
	written   *writtenStatuses
	failures  *failureLog
	released  *releasedPods
	recorder  record.EventRecorder
	log       *slog.Logger
	backoff   time.Duration
	now       func() time.Time
}

// New wires the controller to the informers. Call it before the informer factory is started.
func New(client kubernetes.Interface, jobInformer batchinformers.JobInformer, podInformer coreinformers.PodInformer, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if client == nil || jobInformer == nil || podInformer == nil || recorder == nil {
		return nil, fmt.Errorf("job: client, informers and recorder are required")
	}
	c := &Controller{
		client: client, jobLister: jobInformer.Lister(), podLister: podInformer.Lister(),
		synced:   []cache.InformerSynced{jobInformer.Informer().HasSynced, podInformer.Informer().HasSynced},
		queue:    runner.NewQueue(Name),
		exp:      expectations.New(0, opts.Now),
		written:  newWrittenStatuses(),
		failures: newFailureLog(),
		released: newReleasedPods(),
		recorder: recorder, log: opts.Logger, backoff: opts.Backoff, now: opts.Now,
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.backoff <= 0 {
		c.backoff = DefaultBackoff
	}
	if c.now == nil {
		c.now = time.Now
	}
	if _, err := jobInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, cur any) { c.enqueue(cur) },
		DeleteFunc: c.jobDeleted,
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

// Run processes Jobs with the given number of workers until ctx ends. A Job
// whose sync fails is retried with backoff until it succeeds, as Kubernetes'
// Job controller retries it.
func (c *Controller) Run(ctx context.Context, workers int) {
	runner.RunRetryingForever(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
}

func (c *Controller) enqueue(obj any) {
	if key, ok := runner.KeyOf(obj); ok {
		c.queue.Add(key)
	}
}

// jobOf returns the Job controlling pod, if it is in the cache with the same uid.
func (c *Controller) jobOf(pod *corev1.Pod) *batchv1.Job {
	j, _ := controllerref.ControllerOf(pod, controllerKind, func(ns, name string) (*batchv1.Job, error) {
		return c.jobLister.Jobs(ns).Get(name)
	})
	return j
}

// podUpdated is podChanged for an update, as Kubernetes' updatePod: a resync (same
// resourceVersion) changes nothing, and a pod whose controller changed also wakes the Job that
// controlled it before.
func (c *Controller) podUpdated(old, cur any) {
	oldPod, ok1 := runner.Object[*corev1.Pod](old)
	curPod, ok2 := runner.Object[*corev1.Pod](cur)
	if !ok1 || !ok2 || oldPod.ResourceVersion == curPod.ResourceVersion {
		return
	}
	if oldRef := metav1.GetControllerOfNoCopy(oldPod); oldRef != nil {
		if curRef := metav1.GetControllerOfNoCopy(curPod); curRef == nil || curRef.UID != oldRef.UID {
			if j := c.jobOf(oldPod); j != nil {
				c.queue.Add(j.Namespace + "/" + j.Name)
			}
		}
	}
	c.podChanged(curPod, false, false)
}

func (c *Controller) podChanged(obj any, added, deleted bool) {
	pod, ok := runner.Object[*corev1.Pod](obj)
	if !ok {
		return
	}
	j := c.jobOf(pod)
	if j == nil {
		if !deleted && hasTrackingFinalizer(pod) {
			c.queue.Add(orphanPrefix + pod.Namespace + "/" + pod.Name)
		}
		if !deleted && pod.DeletionTimestamp == nil && metav1.GetControllerOfNoCopy(pod) == nil {
			c.enqueueAdopters(pod)
		}
		return
	}
	key := j.Namespace + "/" + j.Name
	if deleted || !hasTrackingFinalizer(pod) {
		c.released.observed(key, pod.UID)
	}
	switch {
	case deleted || (pod.DeletionTimestamp != nil && !added):
		c.exp.DeletionObserved(key, pod.Namespace+"/"+pod.Name)
	case added && pod.DeletionTimestamp == nil:
		c.exp.CreationObserved(key)
	case added:
		c.exp.DeletionObserved(key, pod.Namespace+"/"+pod.Name)
	}
	c.queue.Add(key)
}

// enqueueAdopters queues the Jobs whose selector matches an orphan pod, as Kubernetes does, so
// that one that may adopt it (a Job with a manual selector) does so now.
func (c *Controller) enqueueAdopters(pod *corev1.Pod) {
	jobs := controllerref.Selecting(c.jobLister.Jobs(pod.Namespace).List,
		func(j *batchv1.Job) *metav1.LabelSelector { return j.Spec.Selector }, pod.Labels)
	for _, j := range jobs {
		c.queue.Add(j.Namespace + "/" + j.Name)
	}
}

// jobDeleted forgets what is kept about a deleted Job and queues its key, so
// a last sync finds it gone.
func (c *Controller) jobDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if j, ok := obj.(*batchv1.Job); ok {
		c.written.forget(j.UID)
	}
	if key, ok := runner.KeyOf(obj); ok {
		c.failures.forget(key)
		c.exp.Forget(key)
		c.released.forget(key)
		c.queue.Add(key)
	}
}

func hasTrackingFinalizer(pod *corev1.Pod) bool {
	return slices.Contains(pod.Finalizers, batchv1.JobTrackingFinalizer)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	if podKey, ok := strings.CutPrefix(key, orphanPrefix); ok {
		return c.releaseOrphan(ctx, podKey)
	}
	return c.syncJob(ctx, key)
}

// releaseOrphan removes the tracking finalizer from a pod whose Job is gone, so it can be deleted.
func (c *Controller) releaseOrphan(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := c.podLister.Pods(ns).Get(name)
	if err != nil || !hasTrackingFinalizer(pod) || c.jobOf(pod) != nil {
		return nil
	}
	return c.removeTrackingFinalizer(ctx, pod)
}
