package cronjob

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs, events and the manager.
const Name = "cronjob-controller"

var controllerKind = batchv1.SchemeGroupVersion.WithKind("CronJob")

// Options tune the controller; zero values mean the defaults.
type Options struct {
	Logger *slog.Logger
	Now    func() time.Time
}

// Controller reconciles CronJobs.
type Controller struct {
	client    kubernetes.Interface
	cjLister  batchlisters.CronJobLister
	jobLister batchlisters.JobLister
	synced    []cache.InformerSynced
	queue     runner.Queue
	recorder  record.EventRecorder
	log       *slog.Logger
	now       func() time.Time
}

// New wires the controller to the informers. Call it before the informer factory is started.
func New(client kubernetes.Interface, cjInformer batchinformers.CronJobInformer, jobInformer batchinformers.JobInformer, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if client == nil || cjInformer == nil || jobInformer == nil || recorder == nil {
		return nil, fmt.Errorf("cronjob: client, informers and recorder are required")
	}
	c := &Controller{
		client: client, cjLister: cjInformer.Lister(), jobLister: jobInformer.Lister(),
		synced:   []cache.InformerSynced{cjInformer.Informer().HasSynced, jobInformer.Informer().HasSynced},
		queue:    runner.NewQueue(Name),
		recorder: recorder, log: opts.Logger, now: opts.Now,
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.now == nil {
		c.now = time.Now
	}
	if _, err := cjInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: c.cronJobUpdated,
	}); err != nil {
		return nil, err
	}
	if _, err := jobInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.jobChanged,
		UpdateFunc: func(_, cur any) { c.jobChanged(cur) },
		DeleteFunc: c.jobChanged,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run processes CronJobs with the given number of workers until ctx ends. A
// CronJob whose sync fails (its Job refused) is retried with backoff until it
// succeeds, as Kubernetes' CronJob controller retries it: dropped, it would
// wait for an event that its schedule alone never brings.
func (c *Controller) Run(ctx context.Context, workers int) {
	runner.RunRetryingForever(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
}

func (c *Controller) enqueue(obj any) {
	if key, ok := runner.KeyOf(obj); ok {
		c.queue.Add(key)
	}
}

// cronJobUpdated queues a changed CronJob. As Kubernetes, one whose schedule or time zone changed
// is not synced at once but at the next time of its new schedule (counted from its last schedule
// time), so that an edit alone does not start a Job; any other change is synced now.
func (c *Controller) cronJobUpdated(old, cur any) {
	prev, ok1 := old.(*batchv1.CronJob)
	cj, ok2 := cur.(*batchv1.CronJob)
	if ok1 && ok2 && (prev.Spec.Schedule != cj.Spec.Schedule || !ptr.Equal(prev.Spec.TimeZone, cj.Spec.TimeZone)) {
		// A schedule that cannot be read, or never fires, is synced now: sync tells why.
		if sched, err := scheduleOf(cj); err == nil {
			now := c.now()
			if next := wakeAt(sched, countFrom(cj, &cj.Status), now); !next.IsZero() {
				c.queue.AddAfter(cj.Namespace+"/"+cj.Name, next.Sub(now)+nextScheduleDelta)
				return
			}
		}
	}
	c.enqueue(cur)
}

func (c *Controller) jobChanged(obj any) {
	job, ok := runner.Object[*batchv1.Job](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(job)
	// By kind alone, as Kubernetes: Jobs made by a batch/v1beta1 CronJob
	// still name that version. sync checks the UID.
	if ref == nil || ref.Kind != controllerKind.Kind {
		return
	}
	c.queue.Add(job.Namespace + "/" + ref.Name)
}
