package resourcequota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	"github.com/skiffkube/skiff/apiserver/admission"
	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs, events and the manager.
const Name = "resourcequota-controller"

// resync is how often every quota is recalculated even without events,
// unless Options.Resync says otherwise.
const resync = 30 * time.Second

// Options tune the controller.
type Options struct {
	Logger *slog.Logger
	// Metadata and Discovery, when set, let the controller count objects of
	// any resource (count/<resource>.<group> quotas, custom resources too)
	// by listing their metadata; without them such counts keep what
	// admission charged.
	Metadata  metadata.Interface
	Discovery discovery.DiscoveryInterface
	// Resync is how often every quota is recalculated without events;
	// zero is 30 seconds.
	Resync time.Duration
	// Shared, when set, hands out informers other loops of the process
	// already run (a sharedinformers.View): a counted kind one of them
	// watches (Deployments, Jobs …) has its deletes seen there rather than
	// through a second watch and cache of the same objects.
	Shared SharedInformers
}

// SharedInformers gives access to informers that already run in the
// process, by the type of object they hold.
type SharedInformers interface {
	Existing(obj runtime.Object) (cache.SharedIndexInformer, bool)
}

// Informers are the kinds whose objects the controller counts.
type Informers struct {
	Quotas     coreinformers.ResourceQuotaInformer
	Pods       coreinformers.PodInformer
	Services   coreinformers.ServiceInformer
	ConfigMaps coreinformers.ConfigMapInformer
	Secrets    coreinformers.SecretInformer
	Claims     coreinformers.PersistentVolumeClaimInformer
}

// Controller recalculates ResourceQuota status.
type Controller struct {
	client   kubernetes.Interface
	quotas   corelisters.ResourceQuotaLister
	counters map[schema.GroupResource]func(namespace string) ([]runtime.Object, error)
	md       metadata.Interface
	disco    discovery.DiscoveryInterface
	mapper   *restmapper.DeferredDiscoveryRESTMapper
	synced   []cache.InformerSynced
	queue    runner.Queue
	log      *slog.Logger
	resync   time.Duration
	shared   SharedInformers

	resetMu   sync.Mutex
	lastReset time.Time

	// Metadata informers of the other kinds quotas count, started as
	// quotas name them; their deletes recount the namespace's quotas.
	watchMu  sync.Mutex
	watching map[schema.GroupVersionResource]*deleteWatch
	runCtx   context.Context // Run's; nil before Run
	watchers sync.WaitGroup
	// gone holds the kinds that were served and no longer are (their
	// CRD was deleted), in the version they had, so that a count can
	// tell at once when they are back.
	gone map[schema.GroupResource]schema.GroupVersionResource
}

// deleteWatch is how the deletes of one counted kind are watched: through
// a metadata informer of the controller's own, which stop ends, or through
// a running informer of the process (stop is nil: that informer is not the
// controller's to end, and it watches a built-in kind that cannot go away).
type deleteWatch struct {
	stop context.CancelFunc
}

// New wires the controller to the informers.
func New(client kubernetes.Interface, inf Informers, opts Options) (*Controller, error) {
	if client == nil || inf.Quotas == nil || inf.Pods == nil || inf.Services == nil || inf.ConfigMaps == nil || inf.Secrets == nil || inf.Claims == nil {
		return nil, fmt.Errorf("resourcequota: client and informers are required")
	}
	c := &Controller{client: client, quotas: inf.Quotas.Lister(), queue: runner.NewQueue(Name), log: opts.Logger, resync: opts.Resync}
	if c.resync <= 0 {
		c.resync = resync
	}
	if opts.Metadata != nil && opts.Discovery != nil {
		c.md, c.disco, c.mapper = opts.Metadata, opts.Discovery, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(opts.Discovery))
		c.shared = opts.Shared
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	pods, svcs, cms, secrets, claims := inf.Pods.Lister(), inf.Services.Lister(), inf.ConfigMaps.Lister(), inf.Secrets.Lister(), inf.Claims.Lister()
	c.counters = map[schema.GroupResource]func(string) ([]runtime.Object, error){
		{Resource: "pods"}: func(ns string) ([]runtime.Object, error) {
			// Every stored pod counts in count/pods; admission.Usage
			// leaves the rest out for pods that finished or whose
			// deletion is past its grace period.
			l, err := pods.Pods(ns).List(labels.Everything())
			return objects(l), err
		},
		{Resource: "services"}: func(ns string) ([]runtime.Object, error) {
			l, err := svcs.Services(ns).List(labels.Everything())
			return objects(l), err
		},
		{Resource: "configmaps"}: func(ns string) ([]runtime.Object, error) {
			l, err := cms.ConfigMaps(ns).List(labels.Everything())
			return objects(l), err
		},
		{Resource: "secrets"}: func(ns string) ([]runtime.Object, error) {
			l, err := secrets.Secrets(ns).List(labels.Everything())
			return objects(l), err
		},
		{Resource: "persistentvolumeclaims"}: func(ns string) ([]runtime.Object, error) {
			// A claim being deleted still holds its storage until it is
			// gone, as Kubernetes counts it.
			l, err := claims.PersistentVolumeClaims(ns).List(labels.Everything())
			return objects(l), err
		},
		{Resource: "resourcequotas"}: func(ns string) ([]runtime.Object, error) {
			l, err := c.quotas.ResourceQuotas(ns).List(labels.Everything())
			return objects(l), err
		},
	}
	// Like Kubernetes' quota controller, recalculate when usage can only
	// have gone down (deletes, pods finishing), when a claim's allocated
	// storage changed, and when a quota is new or its spec changed, plus a
	// periodic resync. Creates are charged by admission; recalculating on
	// them would race with a charge whose object this controller's
	// informers have not seen yet, and undo it.
	if _, err := inf.Quotas.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueQuota,
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.ResourceQuota)
			n, ok2 := cur.(*corev1.ResourceQuota)
			if !ok1 || !ok2 || o.ResourceVersion == n.ResourceVersion || !apiequality.Semantic.DeepEqual(o.Spec, n.Spec) {
				c.enqueueQuota(cur)
			}
		},
		DeleteFunc: c.enqueueNamespaceOf, // the count of quotas dropped
	}); err != nil {
		return nil, err
	}
	c.synced = append(c.synced, inf.Quotas.Informer().HasSynced)
	if _, err := inf.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Pod)
			n, ok2 := cur.(*corev1.Pod)
			if !ok1 || !ok2 {
				return
			}
			// A pod given an activeDeadlineSeconds moves from the
			// NotTerminating scope to the Terminating one, which
			// admission (pods are charged on create) does not count:
			// recount now (Kubernetes' pod update filter leaves this to
			// its periodic recount).
			if released(o, n) || (o.Spec.ActiveDeadlineSeconds == nil) != (n.Spec.ActiveDeadlineSeconds == nil) {
				c.enqueueNamespaceOf(cur)
			}
			// A pod being deleted holds its quota until its grace period
			// has run once more past its deletion timestamp (a pod stuck
			// on a lost node); recount then rather than at the next resync:
			// when its deletion starts, and when a second deletion shortens
			// its grace period (an end already past is released above).
			if end, ok := admission.PodQuotaExpiry(n); ok {
				if before, had := admission.PodQuotaExpiry(o); !had || end.Before(before) {
					c.enqueueNamespaceAfter(n, time.Until(end)+time.Second)
				}
			}
		},
		DeleteFunc: c.enqueueNamespaceOf,
	}); err != nil {
		return nil, err
	}
	// A claim whose request shrank back (after a failed expansion, the
	// allocated size still counts) is recounted like a delete; so is one
	// whose status.allocatedResources storage changed, as Kubernetes'
	// claim update filter (RequiresQuotaReplenish) recounts it: the
	// allocated size counts when it is more than the request, and admission
	// charges no status update.
	if _, err := inf.Claims.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.PersistentVolumeClaim)
			n, ok2 := cur.(*corev1.PersistentVolumeClaim)
			if ok1 && ok2 && (claimShrank(o, n) || allocationChanged(o, n)) {
				c.enqueueNamespaceOf(cur)
			}
		},
	}); err != nil {
		return nil, err
	}
	// A service whose update needs fewer node ports or load balancers (a
	// NodePort or LoadBalancer service turned ClusterIP) gives them back;
	// what an update adds admission charges.
	if _, err := inf.Services.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Service)
			n, ok2 := cur.(*corev1.Service)
			if ok1 && ok2 && shrank(admission.Usage(servicesResource, o), admission.Usage(servicesResource, n)) {
				c.enqueueNamespaceOf(cur)
			}
		},
	}); err != nil {
		return nil, err
	}
	for _, informer := range []cache.SharedIndexInformer{inf.Pods.Informer(), inf.Services.Informer(), inf.ConfigMaps.Informer(), inf.Secrets.Informer(), inf.Claims.Informer()} {
		c.synced = append(c.synced, informer.HasSynced)
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: c.enqueueNamespaceOf}); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// released tells whether a pod update gave compute quota back: it
// finished, or its deletion ran past its grace period.
func released(old, cur *corev1.Pod) bool {
	now := time.Now()
	return admission.PodHoldsQuota(old, now) && !admission.PodHoldsQuota(cur, now)
}

// claimShrank tells whether a claim update lowered the storage it is
// counted for.
func claimShrank(old, cur *corev1.PersistentVolumeClaim) bool {
	before, after := admission.Usage(claimsResource, old), admission.Usage(claimsResource, cur)
	b, a := before[corev1.ResourceRequestsStorage], after[corev1.ResourceRequestsStorage]
	return a.Cmp(b) < 0
}

// allocationChanged tells whether a claim update changed the storage its
// status says is allocated, either way. Kubernetes' RequiresQuotaReplenish
// means to ask this (it compares the two quantities' addresses, which
// always differ, so there every claim update recounts). By value, the
// updates that cannot change the count (binding, conditions) recount
// nothing: a recount may undo a charge admission is making for an object
// the informers have not shown yet.
func allocationChanged(old, cur *corev1.PersistentVolumeClaim) bool {
	return old.Status.AllocatedResources.Storage().Cmp(*cur.Status.AllocatedResources.Storage()) != 0
}

func objects[T runtime.Object](l []T) []runtime.Object {
	out := make([]runtime.Object, len(l))
	for i, o := range l {
		out[i] = o
	}
	return out
}

// Run processes quotas until ctx ends, recalculating every quota each
// resync period besides the events. A quota whose sync fails is retried with
// backoff until it succeeds, as Kubernetes' quota controller retries it.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.watchMu.Lock()
	c.runCtx = ctx
	c.watchMu.Unlock()
	go wait.UntilWithContext(ctx, c.enqueueAll, c.resync)
	runner.RunRetryingForever(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
	c.watchers.Wait()
}

// enqueueAll queues every quota for recalculation.
func (c *Controller) enqueueAll(context.Context) {
	quotas, err := c.quotas.List(labels.Everything())
	if err != nil {
		return
	}
	for _, q := range quotas {
		c.queue.Add(q.Namespace + "/" + q.Name)
	}
}

// enqueueQuota recalculates a new or changed quota now and once more a
// moment later: objects created just before the quota may not have reached
// this controller's (separate) informers yet, and their creation does not
// wake it again.
func (c *Controller) enqueueQuota(obj any) {
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
		c.queue.AddAfter(key, recheckAfter)
	}
}

// recheckAfter is how long after a quota appears or changes it is counted
// again.
const recheckAfter = time.Second

// enqueueNamespaceOf queues every quota of the object's namespace.
func (c *Controller) enqueueNamespaceOf(obj any) { c.enqueueNamespaceAfter(obj, 0) }

// enqueueNamespaceAfter queues every quota of the object's namespace after
// delay.
func (c *Controller) enqueueNamespaceAfter(obj any, delay time.Duration) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	quotas, err := c.quotas.ResourceQuotas(m.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, q := range quotas {
		if delay > 0 {
			c.queue.AddAfter(q.Namespace+"/"+q.Name, delay)
		} else {
			c.queue.Add(q.Namespace + "/" + q.Name)
		}
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	if _, err := c.quotas.ResourceQuotas(ns).Get(name); apierrors.IsNotFound(err) {
		return nil
	}
	// The quota itself is read live: the informer's copy may not have
	// admission's latest charge yet, and comparing with it could skip a
	// correction that is due.
	q, err := c.client.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	// A resource that could not be counted keeps its last value; the rest
	// are written all the same (as Kubernetes does), so that one failing
	// list does not keep the pods' quota from being given back. The error
	// then has the quota counted again.
	used, countErr := c.usage(ctx, q)
	if apiequality.Semantic.DeepEqual(q.Status.Hard, q.Spec.Hard) && apiequality.Semantic.DeepEqual(q.Status.Used, used) {
		return countErr
	}
	q = q.DeepCopy()
	q.Status.Hard = q.Spec.Hard.DeepCopy()
	q.Status.Used = used
	_, err = c.client.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, q, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	return errors.Join(countErr, err)
}

// usage sums what the namespace's objects use of each resource in the
// quota's spec.hard. Resources it does not count (counts of kinds it has no
// informer for, without Options.Metadata; kinds the cluster does not serve,
// for which Kubernetes has no evaluator either) keep the used value they
// had. So do those whose count failed: the error says which, and the rest
// of the list is good. Counts of events and of kinds served cluster-wide,
// which no evaluator ever counts, are left out.
func (c *Controller) usage(ctx context.Context, q *corev1.ResourceQuota) (corev1.ResourceList, error) {
	used := corev1.ResourceList{}
	for name := range q.Spec.Hard {
		if ignored(name) {
			// Never counted, so left out of status.used, as Kubernetes
			// leaves it; a value there is what admission charged before it
			// ignored the kind, and nothing would ever correct it.
			continue
		}
		if v, ok := q.Status.Used[name]; ok {
			used[name] = v.DeepCopy()
		}
	}
	var errs []error
	for gr, list := range c.counters {
		objs, err := list(q.Namespace)
		if err != nil {
			errs = append(errs, fmt.Errorf("counting %s: %w", gr, err))
			continue
		}
		total := corev1.ResourceList{}
		for _, obj := range objs {
			if !admission.QuotaMatches(q, obj) {
				continue
			}
			for name, v := range admission.Usage(gr, obj) {
				sum := total[name]
				sum.Add(v)
				total[name] = sum
			}
		}
		for name := range q.Spec.Hard {
			if counts(gr, name) {
				v, ok := total[name]
				if !ok {
					v = *resource.NewQuantity(0, resource.DecimalSI)
				}
				used[name] = v
			}
		}
	}
	if c.md != nil {
		for name := range q.Spec.Hard {
			gr, ok := admission.CountedName(name)
			if !ok || admission.QuotaIgnores(gr) || c.counted(gr, name) {
				continue
			}
			gvr, err := c.resolve(gr)
			if errors.Is(err, errClusterScoped) {
				// Never counted, so left out, as Kubernetes leaves it; a
				// value there is what this controller counted before it
				// checked the scope, and nothing would ever correct it.
				delete(used, name)
				continue
			}
			if meta.IsNoMatchError(err) {
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("counting %s: %w", name, err))
				continue
			}
			if scoped(q) {
				// Scopes select pods only: a scoped quota counts no
				// object of another kind, as Kubernetes' object-count
				// evaluators match no scope (and admission charges it
				// none), so there is nothing to list.
				used[name] = *resource.NewQuantity(0, resource.DecimalSI)
				continue
			}
			n, err := c.count(ctx, q.Namespace, gvr)
			if meta.IsNoMatchError(err) {
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("counting %s: %w", name, err))
				continue
			}
			used[name] = *resource.NewQuantity(n, resource.DecimalSI)
		}
	}
	return used, errors.Join(errs...)
}

// mapperResetInterval bounds how often a kind the REST mapper does not know
// makes it read discovery again: a quota naming a kind that is not served
// is counted every resync, and each would otherwise re-read discovery.
const mapperResetInterval = 30 * time.Second

// resetMapper makes the REST mapper read discovery again, at most once per
// mapperResetInterval, and says whether it did.
func (c *Controller) resetMapper() bool {
	c.resetMu.Lock()
	defer c.resetMu.Unlock()
	if now := time.Now(); now.Sub(c.lastReset) >= mapperResetInterval {
		c.lastReset = now
		c.mapper.Reset()
		return true
	}
	return false
}

// counted tells whether an informer-backed counter already measures name.
func (c *Controller) counted(gr schema.GroupResource, name corev1.ResourceName) bool {
	for known := range c.counters {
		if counts(known, name) {
			return true
		}
	}
	return false
}

// errClusterScoped says a counted kind is served cluster-wide. Kubernetes'
// quota counts namespaced kinds only (its quota monitor discovers
// ServerPreferredNamespacedResources), so such a count has no evaluator and
// is left out of status.used, like a kind that is not served.
var errClusterScoped = errors.New("kind is not namespaced")

// resolve finds the served version of a counted kind: a NoMatch error when
// it is not served, errClusterScoped when it is not namespaced.
func (c *Controller) resolve(gr schema.GroupResource) (schema.GroupVersionResource, error) {
	gvr, err := c.mapper.ResourceFor(gr.WithVersion(""))
	if err != nil && (c.servedAgain(gr) || c.resetMapper()) {
		// Perhaps a CRD defined since discovery was read.
		gvr, err = c.mapper.ResourceFor(gr.WithVersion(""))
	}
	if err != nil {
		return gvr, err
	}
	gvk, err := c.mapper.KindFor(gvr)
	if err != nil {
		return gvr, err
	}
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return gvr, err
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return gvr, errClusterScoped
	}
	return gvr, nil
}

// count lists a resource's objects in a namespace through the metadata
// client.
func (c *Controller) count(ctx context.Context, ns string, gvr schema.GroupVersionResource) (int64, error) {
	list, err := c.md.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		// The mapper's discovery is older than the kind's removal (its
		// CRD was deleted): it is not served, like a kind the mapper does
		// not know. Have the mapper read discovery again.
		c.markGone(gvr)
		c.resetMapper()
		return 0, &meta.NoResourceMatchError{PartialResource: gvr}
	}
	if err != nil {
		return 0, err
	}
	// Only now that the kind answered: an informer started for a kind no
	// longer served would stop again at its first list.
	c.watchDeletes(gvr)
	return int64(len(list.Items)), nil
}

// markGone records that gvr, once served, is no longer.
func (c *Controller) markGone(gvr schema.GroupVersionResource) {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if c.gone == nil {
		c.gone = map[schema.GroupResource]schema.GroupVersionResource{}
	}
	c.gone[gvr.GroupResource()] = gvr
}

// servedAgain tells whether gr, a kind that was served and went away, is
// served again in the version it had, and if so makes the mapper read
// discovery again at once. The mapper's own re-reads are at most one per
// mapperResetInterval, which would leave a kind whose CRD was deleted and
// created again uncounted, and its deletes unwatched, that long; asking
// discovery for the one group version costs a small request per count.
func (c *Controller) servedAgain(gr schema.GroupResource) bool {
	c.watchMu.Lock()
	gvr, ok := c.gone[gr]
	c.watchMu.Unlock()
	if !ok {
		return false
	}
	if served, err := c.served(gvr); err != nil || !served {
		return false
	}
	c.watchMu.Lock()
	delete(c.gone, gr)
	c.watchMu.Unlock()
	c.resetMu.Lock()
	c.lastReset = time.Now()
	c.resetMu.Unlock()
	c.mapper.Reset()
	return true
}

// watchDeletes starts, once per resource, a metadata informer whose deletes
// recount the quotas of the object's namespace, as Kubernetes' quota
// monitors give such counts back when an object goes rather than at the
// next resync. Creates need no recount (admission charges them), and the
// counts themselves are still listed live: a new informer has not synced.
//
// The controller's own informer of a kind stops when the kind is no longer
// served (its CRD was deleted) rather than retry its list for as long as
// the process runs; the next count that finds the kind served again (the
// periodic resync counts every quota) starts a new one.
func (c *Controller) watchDeletes(gvr schema.GroupVersionResource) {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if c.runCtx == nil || c.watching[gvr] != nil {
		return
	}
	handler := cache.ResourceEventHandlerFuncs{DeleteFunc: c.enqueueNamespaceOf}
	if inf, ok := c.sharedInformer(gvr); ok {
		if _, err := inf.AddEventHandler(handler); err != nil {
			c.log.Warn("watching deletes for quota failed; counted at each resync", "resource", gvr.String(), "err", err)
			return
		}
		c.markWatching(gvr, &deleteWatch{})
		return
	}
	inf := metadatainformer.NewFilteredMetadataInformer(c.md, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	if _, err := inf.AddEventHandler(handler); err != nil {
		c.log.Warn("watching deletes for quota failed; counted at each resync", "resource", gvr.String(), "err", err)
		return
	}
	ctx, stop := context.WithCancel(c.runCtx)
	w := &deleteWatch{stop: stop}
	if err := inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if apierrors.IsNotFound(err) && c.stopIfGone(gvr, w) {
			return
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}); err != nil {
		stop()
		c.log.Warn("watching deletes for quota failed; counted at each resync", "resource", gvr.String(), "err", err)
		return
	}
	c.markWatching(gvr, w)
	c.watchers.Go(func() { inf.RunWithContext(ctx) })
}

// markWatching records how gvr's deletes are watched; watchMu is held.
func (c *Controller) markWatching(gvr schema.GroupVersionResource, w *deleteWatch) {
	if c.watching == nil {
		c.watching = map[schema.GroupVersionResource]*deleteWatch{}
	}
	c.watching[gvr] = w
}

// stopIfGone ends w, gvr's informer, when discovery no longer serves gvr,
// and says whether it did. Its list answered 404 Not Found, which is what a
// removed kind answers; discovery tells that apart from a moment when the
// two disagree. It runs in the informer's own retry loop, which has
// nothing better to do meanwhile.
func (c *Controller) stopIfGone(gvr schema.GroupVersionResource, w *deleteWatch) bool {
	served, err := c.served(gvr)
	if err != nil || served {
		return false
	}
	c.watchMu.Lock()
	if c.watching[gvr] == w {
		delete(c.watching, gvr)
	}
	c.watchMu.Unlock()
	c.markGone(gvr)
	w.stop()
	c.log.Info("counted kind no longer served; stopped watching its deletes until a quota counts it again", "resource", gvr.String())
	return true
}

// served asks discovery, uncached, whether gvr is served.
func (c *Controller) served(gvr schema.GroupVersionResource) (bool, error) {
	list, err := c.disco.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true, nil
		}
	}
	return false, nil
}

// sharedInformer returns the process's running informer of gvr, if
// Options.Shared has one. Only a built-in type in the version client-go
// describes can be one: that is the version the shared informer watches.
func (c *Controller) sharedInformer(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, bool) {
	if c.shared == nil {
		return nil, false
	}
	gvk, err := c.mapper.KindFor(gvr)
	if err != nil {
		return nil, false
	}
	obj, err := clientscheme.Scheme.New(gvk)
	if err != nil {
		return nil, false // not a built-in type (a custom resource)
	}
	return c.shared.Existing(obj)
}

var (
	claimsResource   = schema.GroupResource{Resource: "persistentvolumeclaims"}
	servicesResource = schema.GroupResource{Resource: "services"}
)

// ignored tells whether name counts objects of a kind quota leaves alone
// (events).
func ignored(name corev1.ResourceName) bool {
	gr, ok := admission.CountedName(name)
	return ok && admission.QuotaIgnores(gr)
}

// scoped tells whether a quota has scopes or a scope selector.
func scoped(q *corev1.ResourceQuota) bool {
	return len(q.Spec.Scopes) > 0 || (q.Spec.ScopeSelector != nil && len(q.Spec.ScopeSelector.MatchExpressions) > 0)
}

// shrank tells whether any resource of before is less in after.
func shrank(before, after corev1.ResourceList) bool {
	for name, b := range before {
		if a := after[name]; a.Cmp(b) < 0 {
			return true
		}
	}
	return false
}

// counts tells whether objects of gr are what quota resource name measures.
func counts(gr schema.GroupResource, name corev1.ResourceName) bool {
	n := string(name)
	switch gr.Resource {
	case "persistentvolumeclaims":
		return admission.IsClaimResource(name)
	case "pods":
		return admission.PodResource(name)
	case "services":
		return n == "services" || n == "count/services" || n == "services.nodeports" || n == "services.loadbalancers"
	default:
		return n == gr.Resource || n == "count/"+gr.Resource
	}
}
