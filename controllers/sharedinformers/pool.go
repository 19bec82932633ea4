// Package sharedinformers lets control-plane loops that run in one process,
// each only while it holds its own leader Lease (the controller manager and
// the scheduler of `skiff server`), share one informer factory, so that the
// process caches each pod and node once instead of once per loop.
//
// Sharing informers across leadership terms has one trap: event handlers a
// loop registers stay registered after its term ends, and would keep feeding
// the queues of stopped controllers. So each term gets a View: a factory whose
// informers are the pool's, but whose event handlers are registered on them
// only when the term starts (View.Start, called when the loop becomes leader)
// and removed when it ends (View.Shutdown). A loop that waits for its Lease
// receives no events, and one that lost it receives none any more.
package sharedinformers

import (
	"context"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/tools/cache"
)

// Pool is the process's shared informer factory. Its informers start with
// the first View that starts and run until the Pool's context ends: a
// process that has led once keeps its caches warm, so taking a Lease again
// does not list everything anew.
type Pool struct {
	ctx     context.Context
	factory informers.SharedInformerFactory
	indexMu sync.Mutex // serializes AddIndexers of the views

	typesMu sync.Mutex
	byType  map[reflect.Type]cache.SharedIndexInformer // every typed informer a view asked for
}

// New returns a Pool of factory's informers, which run until ctx ends.
// factory's default resync is the longest any view asks for; each view's
// handlers get the view's own resync period.
func New(ctx context.Context, factory informers.SharedInformerFactory) *Pool {
	return &Pool{ctx: ctx, factory: factory, byType: map[reflect.Type]cache.SharedIndexInformer{}}
}

// Shutdown waits for the pool's informers to stop, after its context ended.
func (p *Pool) Shutdown() { p.factory.Shutdown() }

// View returns a factory for one leadership term of one loop. Handlers
// registered through it get resync as their resync period (0: none).
func (p *Pool) View(resync time.Duration) *View {
	return &View{pool: p, resync: resync, informers: map[cache.SharedIndexInformer]*viewInformer{}, stopped: make(chan struct{})}
}

// View is one term's window onto the Pool: an informers.SharedInformerFactory
// whose handlers are live between Start and Shutdown only.
type View struct {
	pool   *Pool
	resync time.Duration

	mu        sync.Mutex
	informers map[cache.SharedIndexInformer]*viewInformer
	regs      []*registration
	started   bool
	shutdown  bool
	stopped   chan struct{} // closed by Shutdown
}

var _ informers.SharedInformerFactory = (*View)(nil)

// registration is a handler registered through a View: pending until the
// View starts, then registered on the shared informer until it shuts down.
type registration struct {
	inf     cache.SharedIndexInformer
	handler cache.ResourceEventHandler
	opts    cache.HandlerOptions

	live    chan struct{} // closed once real is set
	real    cache.ResourceEventHandlerRegistration
	removed bool

	// ended is closed when the registration can no longer sync: its
	// view shut down; poolEnded when the pool's informers stop.
	ended, poolEnded <-chan struct{}
}

// HasSynced is true once the handler has been registered and has received
// the shared informer's initial state.
func (r *registration) HasSynced() bool {
	select {
	case <-r.live:
		return r.real.HasSynced()
	default:
		return false
	}
}

// HasSyncedChecker reports the same as HasSynced through a channel.
func (r *registration) HasSyncedChecker() cache.DoneChecker {
	return pendingChecker{r}
}

type pendingChecker struct{ r *registration }

func (c pendingChecker) Name() string { return "shared informer handler" }

func (c pendingChecker) Done() <-chan struct{} {
	select {
	case <-c.r.live:
		return c.r.real.HasSyncedChecker().Done()
	default:
	}
	// Not registered yet: wait for the view to start, but no longer than
	// it or the pool lives, or this goroutine would outlive a view that
	// never starts. The channel then stays open: the handler never synced.
	r := c.r
	done := make(chan struct{})
	go func() {
		select {
		case <-r.live:
		case <-r.ended:
			return
		case <-r.poolEnded:
			return
		}
		select {
		case <-r.real.HasSyncedChecker().Done():
			close(done)
		case <-r.ended:
		case <-r.poolEnded:
		}
	}()
	return done
}

// Start registers the view's handlers on the shared informers and starts
// every informer of the pool not yet running. stopCh is the term's: the
// informers outlive it (the pool's context stops them), the handlers do not
// (Shutdown removes them).
func (v *View) Start(stopCh <-chan struct{}) {
	v.mu.Lock()
	if v.started || v.shutdown {
		v.mu.Unlock()
		return
	}
	v.started = true
	regs := v.regs
	v.mu.Unlock()
	for _, r := range regs {
		v.activate(r)
	}
	v.pool.factory.Start(v.pool.ctx.Done())
}

// StartWithContext is Start(ctx.Done()).
func (v *View) StartWithContext(ctx context.Context) { v.Start(ctx.Done()) }

// activate registers r on its shared informer.
func (v *View) activate(r *registration) {
	real, err := r.inf.AddEventHandlerWithOptions(r.handler, r.opts)
	if err != nil {
		// The informer was stopped: the pool's context ended, so the
		// process is going away; the handler stays pending (never synced).
		return
	}
	v.mu.Lock()
	r.real = real
	removed := r.removed // Shutdown came first: take it off again
	v.mu.Unlock()
	close(r.live)
	if removed {
		_ = r.inf.RemoveEventHandler(real)
	}
}

// Shutdown removes the view's handlers from the shared informers; the
// informers keep running for the pool's other views and later terms. It
// does not wait: a handler call already under way may still finish.
func (v *View) Shutdown() {
	v.mu.Lock()
	if v.shutdown {
		v.mu.Unlock()
		return
	}
	v.shutdown = true
	close(v.stopped)
	regs := v.regs
	v.mu.Unlock()
	for _, r := range regs {
		v.remove(r)
	}
}

func (v *View) remove(r *registration) error {
	v.mu.Lock()
	real := r.real
	already := r.removed
	r.removed = true
	v.mu.Unlock()
	if already || real == nil {
		return nil
	}
	return r.inf.RemoveEventHandler(real)
}

// WaitForCacheSync waits for the pool's started informers.
func (v *View) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	return v.pool.factory.WaitForCacheSync(stopCh)
}

// WaitForCacheSyncWithContext waits for the pool's started informers.
func (v *View) WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult {
	return v.pool.factory.WaitForCacheSyncWithContext(ctx)
}

// InformerFor returns the pool's informer for obj, seen through the view.
func (v *View) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	inf := v.pool.factory.InformerFor(obj, newFunc)
	v.pool.typesMu.Lock()
	v.pool.byType[reflect.TypeOf(obj)] = inf
	v.pool.typesMu.Unlock()
	return v.wrap(inf)
}

// Existing returns, seen through the view, the pool's informer for objects
// like obj if some loop of the process has asked for one through the typed
// accessors (InformerFor); it never creates one. A loop that could watch a
// resource in some cheaper form (the garbage collector watches metadata
// only) takes the full objects the process caches anyway instead of a
// second watch and cache of its own. An informer asked for by a view that
// has not started yet starts now if this view has.
func (v *View) Existing(obj runtime.Object) (cache.SharedIndexInformer, bool) {
	v.pool.typesMu.Lock()
	inf, ok := v.pool.byType[reflect.TypeOf(obj)]
	v.pool.typesMu.Unlock()
	if !ok {
		return nil, false
	}
	v.mu.Lock()
	started := v.started
	v.mu.Unlock()
	if started {
		v.pool.factory.Start(v.pool.ctx.Done()) // a no-op for informers already running
	}
	return v.wrap(inf), true
}

// InformerName is the pool factory's, for informer metrics.
func (v *View) InformerName() *cache.InformerName { return v.pool.factory.InformerName() }

// ForResource returns the pool's generic informer for resource, seen
// through the view.
func (v *View) ForResource(resource schema.GroupVersionResource) (informers.GenericInformer, error) {
	g, err := v.pool.factory.ForResource(resource)
	if err != nil {
		return nil, err
	}
	return genericInformer{GenericInformer: g, inf: v.wrap(g.Informer())}, nil
}

type genericInformer struct {
	informers.GenericInformer
	inf cache.SharedIndexInformer
}

func (g genericInformer) Informer() cache.SharedIndexInformer { return g.inf }

func (v *View) wrap(inf cache.SharedIndexInformer) cache.SharedIndexInformer {
	v.mu.Lock()
	defer v.mu.Unlock()
	if w, ok := v.informers[inf]; ok {
		return w
	}
	w := &viewInformer{SharedIndexInformer: inf, view: v}
	v.informers[inf] = w
	return w
}

// viewInformer is a shared informer whose handler registrations go through
// the view; everything else (stores, listers, indexers) is the shared one.
type viewInformer struct {
	cache.SharedIndexInformer
	view *View
}

func (i *viewInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(h, cache.HandlerOptions{})
}

func (i *viewInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(h, cache.HandlerOptions{ResyncPeriod: &resync})
}

func (i *viewInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, opts cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	if opts.ResyncPeriod == nil {
		resync := i.view.resync
		opts.ResyncPeriod = &resync
	}
	v := i.view
	r := &registration{inf: i.SharedIndexInformer, handler: h, opts: opts, live: make(chan struct{}),
		ended: v.stopped, poolEnded: v.pool.ctx.Done()}
	v.mu.Lock()
	if v.shutdown {
		v.mu.Unlock()
		return r, nil // never registered: the term is over
	}
	v.regs = append(v.regs, r)
	started := v.started
	v.mu.Unlock()
	if started {
		v.activate(r)
	}
	return r, nil
}

func (i *viewInformer) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	if r, ok := handle.(*registration); ok {
		return i.view.remove(r)
	}
	return i.SharedIndexInformer.RemoveEventHandler(handle)
}

// AddIndexers adds the indexers the shared informer does not have yet. A
// later term's controller asks for the same named indexers as the first's;
// they are pure functions of the object, so the first's serve both.
func (i *viewInformer) AddIndexers(indexers cache.Indexers) error {
	i.view.pool.indexMu.Lock()
	defer i.view.pool.indexMu.Unlock()
	have := i.GetIndexer().GetIndexers()
	missing := cache.Indexers{}
	for name, fn := range indexers {
		if _, ok := have[name]; !ok {
			missing[name] = fn
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return i.SharedIndexInformer.AddIndexers(missing)
}
