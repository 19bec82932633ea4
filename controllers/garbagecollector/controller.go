package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs, events and the manager.
const Name = "garbage-collector-controller"

// Defaults.
const (
	DefaultDiscoveryPeriod = 30 * time.Second
	// DefaultRecheck is how soon an owner deleting its dependents in the foreground looks again when
	// no event woke it.
	DefaultRecheck = 5 * time.Second
)

// ownerIndex indexes every monitored object by the UIDs of its owners. The name is the garbage
// collector's own: it is added to informers other loops share.
const ownerIndex = "garbagecollector/ownerUID"

// uidIndex indexes the objects of namespaced resources by their own UID, so that an owner
// reference resolved in the wrong namespace can be told from one to an owner that is gone.
const uidIndex = "garbagecollector/uid"

// ignored resources are never garbage collected (as in Kubernetes): events churn and are
// short-lived, and nothing owns them.
var ignored = sets.New(
	schema.GroupResource{Group: "", Resource: "events"},
	schema.GroupResource{Group: "events.k8s.io", Resource: "events"},
)

// Options tune the controller; zero values mean the defaults.
type Options struct {
	Logger          *slog.Logger
	DiscoveryPeriod time.Duration
	Recheck         time.Duration
	// Resync of the monitors' informers; 0 means none (the work is event driven and level based).
	Resync time.Duration
	// Shared, when set, hands out informers that other loops of the process already run. A
	// resource with one is monitored through it, not through a metadata watch and cache of the
	// collector's own: the process then caches and decodes each pod once, not twice.
	Shared SharedInformers
}

// SharedInformers gives access to informers that already run in the process
// (sharedinformers.View implements it).
type SharedInformers interface {
	// Existing returns the process's informer for objects like obj, if it has one; it creates none.
	Existing(obj runtime.Object) (cache.SharedIndexInformer, bool)
}

// Controller is the garbage collector.
type Controller struct {
	md        metadata.Interface
	discovery discovery.DiscoveryInterface
	discCache discovery.CachedDiscoveryInterface
	mapper    *restmapper.DeferredDiscoveryRESTMapper
	queue     runner.Queue
	recorder  record.EventRecorder
	log       *slog.Logger
	opts      Options

	mu       sync.RWMutex
	monitors map[schema.GroupResource]*monitor
}

// monitor watches one resource's metadata, through an informer of its own or one the process
// shares (whose objects are typed: see partial).
type monitor struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	informer   cache.SharedIndexInformer
	stop       func() // stops the informer, or takes the handlers off a shared one
	started    time.Time
}

// syncGrace is how long a monitor may take to list before orphaning and foreground deletion stop
// waiting for it (as Kubernetes' garbage collector, which proceeds after a sync timeout): one
// resource that cannot be listed must not block every deletion.
const syncGrace = 30 * time.Second

// New wires the garbage collector. disc lists the served resources; md reads, patches and deletes
// objects of any resource.
func New(disc discovery.DiscoveryInterface, md metadata.Interface, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if disc == nil || md == nil || recorder == nil {
		return nil, fmt.Errorf("garbagecollector: discovery, metadata client and recorder are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.DiscoveryPeriod <= 0 {
		opts.DiscoveryPeriod = DefaultDiscoveryPeriod
	}
	if opts.Recheck <= 0 {
		opts.Recheck = DefaultRecheck
	}
	cached := memory.NewMemCacheClient(disc)
	return &Controller{
		md: md, discovery: disc, discCache: cached,
		mapper:   restmapper.NewDeferredDiscoveryRESTMapper(cached),
		queue:    runner.NewQueue(Name),
		recorder: recorder, log: opts.Logger, opts: opts,
		monitors: map[schema.GroupResource]*monitor{},
	}, nil
}

// Run discovers resources, keeps their monitors running and processes items until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	if err := c.resyncMonitors(ctx); err != nil {
		c.log.Warn("garbage collector discovery", "err", err)
	}
	go func() {
		t := time.NewTicker(c.opts.DiscoveryPeriod)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := c.resyncMonitors(ctx); err != nil {
					c.log.Warn("garbage collector discovery", "err", err)
				}
			}
		}
	}()
	runner.RunRetryingForever(ctx, Name, c.queue, workers, c.sync, c.log)
	c.mu.Lock()
	for gr, m := range c.monitors {
		m.stop()
		delete(c.monitors, gr)
	}
	c.mu.Unlock()
}

// resyncMonitors starts a monitor for every newly served resource and stops the monitors of
// resources no longer served (a deleted CRD).
func (c *Controller) resyncMonitors(ctx context.Context) error {
	c.discCache.Invalidate()
	c.mapper.Reset()
	lists, err := discovery.ServerPreferredResources(c.discCache)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return err
	}
	// A group whose discovery failed this time (an aggregated API briefly down) is still
	// served as far as anyone knows: its monitors stay, as in Kubernetes. Stopping them would
	// hide its dependents, and an orphaning or foreground owner would finish without them.
	var failed map[schema.GroupVersion]error
	if gdf := (*discovery.ErrGroupDiscoveryFailed)(nil); errors.As(err, &gdf) {
		failed = gdf.Groups
	}
	want := map[schema.GroupResource]*monitor{}
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerbs(r.Verbs, "list", "watch", "get", "patch", "delete") {
				continue
			}
			gvr := gv.WithResource(r.Name)
			if ignored.Has(gvr.GroupResource()) {
				continue
			}
			want[gvr.GroupResource()] = &monitor{gvr: gvr, kind: r.Kind, namespaced: r.Namespaced}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for gr, m := range c.monitors {
		if _, down := failed[m.gvr.GroupVersion()]; down {
			delete(want, gr)
			continue
		}
		if w, ok := want[gr]; !ok || w.gvr != m.gvr {
			m.stop()
			delete(c.monitors, gr)
		}
	}
	for gr, m := range want {
		if _, ok := c.monitors[gr]; ok {
			continue
		}
		if err := c.startMonitor(ctx, m); err != nil {
			c.log.Warn("garbage collector cannot monitor resource", "resource", m.gvr.String(), "err", err)
			continue
		}
		c.monitors[gr] = m
	}
	return err // a partial discovery failure is reported after monitoring what could be found
}

func hasVerbs(have metav1.Verbs, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			if h == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func (c *Controller) startMonitor(ctx context.Context, m *monitor) error {
	handlers := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onAdd(m, obj) },
		UpdateFunc: func(old, cur any) { c.onUpdate(m, old, cur) },
		DeleteFunc: func(obj any) { c.onDelete(m, obj) },
	}
	indexers := cache.Indexers{ownerIndex: indexByOwner}
	if m.namespaced {
		indexers[uidIndex] = indexByUID
	}
	if inf, ok := c.sharedInformer(m); ok {
		// A shared informer keeps the indexers of a monitor stopped before (its resource
		// briefly not served): adding them again would be refused as a conflict.
		have := inf.GetIndexer().GetIndexers()
		for name := range indexers {
			if _, ok := have[name]; ok {
				delete(indexers, name)
			}
		}
		if err := inf.AddIndexers(indexers); err != nil {
			return err
		}
		reg, err := inf.AddEventHandlerWithResyncPeriod(handlers, c.opts.Resync)
		if err != nil {
			return err
		}
		m.informer, m.started = inf, time.Now()
		m.stop = func() { _ = inf.RemoveEventHandler(reg) }
		return nil
	}
	inf := metadatainformer.NewFilteredMetadataInformer(c.md, m.gvr, metav1.NamespaceAll, c.opts.Resync,
		indexers, nil).Informer()
	// Keep only what garbage collection reads: the caches hold every object of the cluster.
	if err := inf.SetTransform(trim); err != nil {
		return err
	}
	if _, err := inf.AddEventHandler(handlers); err != nil {
		return err
	}
	mctx, cancel := context.WithCancel(ctx)
	m.informer, m.stop, m.started = inf, cancel, time.Now()
	go inf.Run(mctx.Done())
	return nil
}

// sharedInformer returns the process's informer of m's resource, if Options.Shared has one. The
// served version must be the one client-go's types describe: the shared informer watches that
// version.
func (c *Controller) sharedInformer(m *monitor) (cache.SharedIndexInformer, bool) {
	if c.opts.Shared == nil {
		return nil, false
	}
	obj, err := clientscheme.Scheme.New(m.gvr.GroupVersion().WithKind(m.kind))
	if err != nil {
		return nil, false // not a built-in type (a custom resource)
	}
	return c.opts.Shared.Existing(obj)
}

// trim drops managed fields, labels and annotations from cached metadata.
func trim(obj any) (any, error) {
	if p, ok := obj.(*metav1.PartialObjectMetadata); ok {
		p.ManagedFields, p.Labels, p.Annotations = nil, nil, nil
	}
	return obj, nil
}

func indexByOwner(obj any) ([]string, error) {
	o, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	refs := o.GetOwnerReferences()
	if len(refs) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, string(r.UID))
	}
	return out, nil
}

func indexByUID(obj any) ([]string, error) {
	o, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	return []string{string(o.GetUID())}, nil
}

// synced reports whether every monitor has listed its resource (or had syncGrace to do so): only
// then is the set of an owner's dependents complete enough to finish orphaning or foreground
// deletion.
func (c *Controller) synced() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.monitors) == 0 {
		return false
	}
	for _, m := range c.monitors {
		if !m.informer.HasSynced() && time.Since(m.started) < syncGrace {
			return false
		}
	}
	return true
}

// monitorFor returns the monitor of a group/resource, or nil.
func (c *Controller) monitorFor(gr schema.GroupResource) *monitor {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.monitors[gr]
}

// elsewhere returns the monitored object of t's resource that has t's UID but lives in another
// namespace than t, or nil.
func (c *Controller) elsewhere(t target) *metav1.PartialObjectMetadata {
	m := c.monitorFor(t.gvr.GroupResource())
	if m == nil || !m.namespaced {
		return nil
	}
	objs, err := m.informer.GetIndexer().ByIndex(uidIndex, string(t.uid))
	if err != nil {
		return nil
	}
	for _, o := range objs {
		if p := partial(o); p != nil && p.Namespace != t.namespace {
			return p
		}
	}
	return nil
}

// dependent is an object found through the owner index.
type dependent struct {
	m   *monitor
	obj *metav1.PartialObjectMetadata
}

// dependentsOf lists the cached objects that name uid as an owner, across every resource.
func (c *Controller) dependentsOf(uid string) []dependent {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []dependent
	for _, m := range c.monitors {
		objs, err := m.informer.GetIndexer().ByIndex(ownerIndex, uid)
		if err != nil {
			continue
		}
		for _, o := range objs {
			if p := partial(o); p != nil {
				out = append(out, dependent{m: m, obj: p})
			}
		}
	}
	return out
}
