package runner

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// MaxRetries is how many times Run retries a failing key with backoff before it drops it, as
// Kubernetes' controllers that give up do (maxRetries = 15 in its Deployment, Endpoints and
// EndpointSlice controllers). Dropping is safe only where something is due to bring the key back:
// the next informer event or resync enqueues it again, and sync is level-based.
const MaxRetries = 15

// warnEvery is how many failures in a row of one key are logged at Debug
// before one is logged as a warning (and again every warnEvery): a conflict or
// a cache behind the API server is routine and resolves within a few retries,
// but a key still failing after ten (about 2.5 s of client-go's default
// backoff) is worth an operator's eye before the key is dropped, or ever, for
// controllers that retry forever (Kubernetes' controllers log every failure).
// The backoff doubles, so later warnings come far apart (the 20th failure
// about 40 minutes in, then hours apart at the default limiter's 1000 s cap).
const warnEvery = 10

// Queue is the workqueue type every controller uses: keys are "namespace/name" strings.
type Queue = workqueue.TypedRateLimitingInterface[string]

// NewQueue returns a named rate-limited queue with client-go's default controller backoff.
func NewQueue(name string) Queue {
	return NewQueueWithRateLimiter(name, workqueue.DefaultTypedControllerRateLimiter[string]())
}

// NewQueueWithRateLimiter is NewQueue with the backoff of rl, for a controller whose Kubernetes
// counterpart tunes its own.
func NewQueueWithRateLimiter(name string, rl workqueue.TypedRateLimiter[string]) Queue {
	cfg := workqueue.TypedRateLimitingQueueConfig[string]{Name: name}
	if m := queueMetrics.Load(); m != nil {
		cfg.MetricsProvider = m
	}
	return workqueue.NewTypedRateLimitingQueueWithConfig(rl, cfg)
}

// SyncFunc reconciles one key.
type SyncFunc func(ctx context.Context, key string) error

// Run waits for the given informers to sync, starts workers goroutines, and blocks until ctx is done;
// then it shuts the queue down and waits for the workers to return. A key failing MaxRetries times
// in a row is dropped. It serves the controllers whose Kubernetes counterparts drop a key after
// maxRetries failures (deployment, endpoints, endpointslice, endpointslicemirroring; tokensecret,
// whose counterpart gives up after 10) and nodelifecycle, which enqueues every node again each
// monitor period anyway. Every other controller retries forever (RunRetryingForever).
func Run(ctx context.Context, name string, q Queue, workers int, syncFn SyncFunc, log *slog.Logger, synced ...cache.InformerSynced) {
	run(ctx, name, q, workers, syncFn, MaxRetries, log, synced...)
}

// RunRetryingForever is Run for controllers whose keys no later event brings back once dropped: a
// failing key is retried with backoff (up to the limiter's cap, 1000 s by default) until it
// succeeds, as Kubernetes' workers that requeue every failure with AddRateLimited do, so that an
// API server away, a quota or a webhook refusing writes for minutes delays their work but loses
// none. It serves the controllers whose counterparts retry forever: replicaset (and replication),
// daemonset, statefulset, job, cronjob, disruption (both queues), resourcequota, nodeipam,
// volumeprotection, garbagecollector, namespace, serviceaccount and rootcacert; and the volume
// controllers persistentvolume (Kubernetes' binder takes every claim and volume up again each
// 15 s) and localpath (a failed provisioning must be tried again).
func RunRetryingForever(ctx context.Context, name string, q Queue, workers int, syncFn SyncFunc, log *slog.Logger, synced ...cache.InformerSynced) {
	run(ctx, name, q, workers, syncFn, -1, log, synced...)
}

// run is Run with maxRetries failures in a row before a key is dropped, or none if negative.
func run(ctx context.Context, name string, q Queue, workers int, syncFn SyncFunc, maxRetries int, log *slog.Logger, synced ...cache.InformerSynced) {
	if log == nil {
		log = slog.Default()
	}
	if workers < 1 {
		workers = 1
	}
	defer q.ShutDown()
	log.Info("starting controller", "controller", name, "workers", workers)
	defer log.Info("stopped controller", "controller", name)
	if !cache.WaitForNamedCacheSync(name, ctx.Done(), synced...) {
		return
	}
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Go(func() {
			for processNext(ctx, name, q, syncFn, maxRetries, log) {
			}
		})
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
}

func processNext(ctx context.Context, name string, q Queue, syncFn SyncFunc, maxRetries int, log *slog.Logger) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	start := time.Now()
	err := syncFn(ctx, key)
	switch {
	case err == nil:
		q.Forget(key)
	case maxRetries < 0 || q.NumRequeues(key) < maxRetries:
		if failures := q.NumRequeues(key) + 1; failures%warnEvery == 0 {
			log.Warn("sync still failing, retrying", "controller", name, "key", key, "failures", failures, "err", err)
		} else {
			log.Debug("sync failed, retrying", "controller", name, "key", key, "err", err)
		}
		q.AddRateLimited(key)
	default:
		log.Warn("sync failed, dropping key", "controller", name, "key", key, "err", err)
		q.Forget(key)
	}
	if d := time.Since(start); d > time.Second {
		log.Debug("slow sync", "controller", name, "key", key, "duration", d)
	}
	return true
}

// KeyOf returns the queue key of an informer object, unwrapping delete tombstones.
func KeyOf(obj any) (string, bool) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	return key, err == nil
}

// Object returns an informer event's object as a T, looking inside the
// tombstone (cache.DeletedFinalStateUnknown) a delete may deliver instead.
func Object[T any](obj any) (T, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	t, ok := obj.(T)
	return t, ok
}
