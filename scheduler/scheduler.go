package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	schedcache "github.com/skiffkube/skiff/scheduler/cache"
	"github.com/skiffkube/skiff/scheduler/framework/runtime"
	"github.com/skiffkube/skiff/scheduler/metrics"
	"github.com/skiffkube/skiff/scheduler/plugins"
	"github.com/skiffkube/skiff/scheduler/plugins/noderesourcesfit"
	"github.com/skiffkube/skiff/scheduler/queue"
)

// Scheduler places pending pods on nodes. Build it with New, then call Run
// (or RunWithLeaderElection) once.
type Scheduler struct {
	cfg       Config
	log       *slog.Logger
	client    kubernetes.Interface
	factory   informers.SharedInformerFactory
	podLister corelisters.PodLister
	nsLister  corelisters.NamespaceLister
	synced    []cache.InformerSynced

	cache    *schedcache.Cache
	snapshot *schedcache.Snapshot
	queue    *queue.PriorityQueue
	fwk      *runtime.Framework
	// nominator holds the pods preemption nominated to nodes; Filter keeps
	// their room for them.
	nominator *nominator
	metrics   *metrics.Metrics
	// statusWrites keeps a pod's PodScheduled=False writes in attempt order.
	statusWrites statusWrites

	broadcaster events.EventBroadcaster
	recorder    events.EventRecorder

	// nextStartNodeIndex rotates where filtering starts, so that stopping
	// early at enough feasible nodes doesn't always favour the same nodes.
	nextStartNodeIndex int
	rand               *rand.Rand

	// plugins describes the profile for the start-up log: each plugin, with
	// its weight where it scores.
	plugins []string

	// bindings tracks in-flight binding goroutines (and those plugins start
	// through Handle.Go) so Run can wait for them.
	bindings sync.WaitGroup
	// runCtx is Run's context, which plugins' goroutines get: they end
	// with the scheduler (nil before Run: tests driving scheduleOne).
	runCtx context.Context
	ran    bool
	mu     sync.Mutex
}

// New builds a scheduler over clientset and registers its event handlers on
// the factory's pod, node and namespace informers. Run starts the factory.
func New(clientset kubernetes.Interface, factory informers.SharedInformerFactory, cfg Config) (*Scheduler, error) {
	if clientset == nil || factory == nil {
		return nil, errors.New("scheduler: a clientset and an informer factory are required")
	}
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	s := &Scheduler{
		cfg:       cfg,
		log:       cfg.Logger.With("component", "scheduler", "scheduler", cfg.SchedulerName),
		client:    clientset,
		factory:   factory,
		cache:     schedcache.New(cfg.AssumedPodTTL),
		snapshot:  schedcache.NewEmptySnapshot(),
		nominator: newNominator(),
		rand:      rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5c1ff)),
	}
	registry := plugins.Registry()
	if cfg.Registry != nil {
		if err := registry.Merge(cfg.Registry); err != nil {
			return nil, fmt.Errorf("scheduler: %w", err)
		}
	}
	profile := cfg.Plugins
	if profile == nil {
		profile = plugins.DefaultProfile(noderesourcesfit.ScoringStrategy(cfg.ScoringStrategy))
	}
	for _, pc := range profile {
		if pc.NoScore {
			s.plugins = append(s.plugins, pc.Name+"(no score)")
		} else if pc.Weight > 0 {
			s.plugins = append(s.plugins, fmt.Sprintf("%s(weight %d)", pc.Name, pc.Weight))
		} else {
			s.plugins = append(s.plugins, pc.Name)
		}
	}
	podInformer := factory.Core().V1().Pods()
	nodeInformer := factory.Core().V1().Nodes()
	nsInformer := factory.Core().V1().Namespaces()
	s.podLister = podInformer.Lister()
	s.nsLister = nsInformer.Lister()
	// events.k8s.io Events, as kube-scheduler records them: that
	// broadcaster writes each Event on its own goroutine, so a burst of
	// bindings is not held to one write at a time (core/v1's record
	// broadcaster queues 1,000 and then drops).
	s.broadcaster = events.NewBroadcaster(&events.EventSinkImpl{Interface: clientset.EventsV1()})
	s.recorder = s.broadcaster.NewRecorder(scheme.Scheme, cfg.SchedulerName)
	s.metrics = cfg.Metrics
	if s.metrics == nil {
		s.metrics = metrics.New()
	}
	fwk, err := runtime.New(registry, profile, runtime.Options{
		ClientSet:     clientset,
		Informers:     factory,
		Snapshot:      s.snapshot,
		Namespaces:    namespaceLabels{s.nsLister},
		Parallelism:   cfg.Parallelism,
		EventRecorder: s.recorder,
		Nominator:     s.nominator,
		Metrics:       s.metrics,
		Go:            s.goPlugin,
		Queue:         queueActivator{s},
	})
	if err != nil {
		return nil, err
	}
	if !fwk.HasBindPlugins() {
		return nil, errors.New("scheduler: the profile has no bind plugin")
	}
	// As kube-scheduler's: the queue is in the profile's queue sort order.
	less := fwk.QueueSortFunc()
	if less == nil {
		return nil, errors.New("scheduler: no queue sort plugin is enabled")
	}
	s.fwk = fwk
	s.queue = queue.New(queue.Options{InitialBackoff: cfg.PodInitialBackoff, MaxBackoff: cfg.PodMaxBackoff, Less: less,
		PreEnqueue: func(pod *v1.Pod) bool { return fwk.RunPreEnqueuePlugins(context.Background(), pod).IsSuccess() }})
	s.metrics.Attach(s.queue.Lengths)
	if err := s.addEventHandlers(podInformer.Informer(), nodeInformer.Informer()); err != nil {
		return nil, err
	}
	if err := s.addVolumeEventHandlers(); err != nil {
		return nil, err
	}
	s.synced = []cache.InformerSynced{podInformer.Informer().HasSynced, nodeInformer.Informer().HasSynced, nsInformer.Informer().HasSynced}
	return s, nil
}

// Run starts the informers, waits for their caches, then schedules until ctx
// is done. It returns after in-flight binds finish. It may be called once.
func (s *Scheduler) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.ran {
		s.mu.Unlock()
		return errors.New("scheduler: Run called twice")
	}
	s.ran = true
	s.mu.Unlock()

	if err := s.broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return fmt.Errorf("scheduler: recording events: %w", err)
	}
	defer s.broadcaster.Shutdown()

	s.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return fmt.Errorf("scheduler: informer caches did not sync: %w", context.Cause(ctx))
	}
	for informer, ok := range s.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("scheduler: %v cache did not sync: %w", informer, context.Cause(ctx))
		}
	}
	// What it runs with, so that an operator can see a configuration file took.
	s.log.Info("scheduler started", "scoringStrategy", s.cfg.ScoringStrategy, "plugins", s.plugins,
		"percentageOfNodesToScore", s.cfg.PercentageOfNodesToScore, "parallelism", s.cfg.Parallelism)

	s.runCtx = ctx
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.queue.Run(ctx) }()
	go func() { defer wg.Done(); s.expireAssumedPods(ctx) }()
	for ctx.Err() == nil {
		s.scheduleOne(ctx)
	}
	wg.Wait()
	s.bindings.Wait()
	s.log.Info("scheduler stopped")
	return nil
}

// goPlugin runs a plugin's goroutine (framework.Handle's Go) with Run's
// context, counted with the binding cycles so that Run waits for it: a
// scheduler stopped, say at the end of its leadership term, leaves nothing
// acting in its name.
func (s *Scheduler) goPlugin(fn func(ctx context.Context)) {
	ctx := s.runCtx
	if ctx == nil {
		ctx = context.Background()
	}
	s.bindings.Go(func() { fn(ctx) })
}

// queueActivator lets plugins move pods in the queue, which is built after
// the framework (it needs its queue sort and PreEnqueue plugins).
type queueActivator struct{ s *Scheduler }

func (a queueActivator) Activate(pod *v1.Pod) { a.s.queue.Activate(pod) }
func (a queueActivator) Ungate(pod *v1.Pod)   { a.s.queue.Ungate(pod) }

func (s *Scheduler) expireAssumedPods(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n := s.cache.Cleanup(); n > 0 {
				s.log.Warn("expired assumed pods the informer never confirmed", "count", n)
				s.queue.MoveAllToActiveOrBackoffQueue(nil)
			}
		}
	}
}

// namespaceLabels reads namespace labels for affinity namespace selectors.
type namespaceLabels struct{ lister corelisters.NamespaceLister }

func (n namespaceLabels) NamespaceLabels(name string) map[string]string {
	ns, err := n.lister.Get(name)
	if err != nil {
		return nil
	}
	return ns.Labels
}
