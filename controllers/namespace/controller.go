package namespace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs, events and the manager.
const Name = "namespace-controller"

// deletionGracePeriod is how long after a namespace is seen terminating its content is deleted, as
// in Kubernetes: by then every API server (each admits creates against its own cache of namespaces)
// has seen it terminating and refuses new content in it, so nothing it let in just before can
// outlive a namespace emptied and finalized at once.
const deletionGracePeriod = 5 * time.Second

// finalizerEstimate is how long, as Kubernetes estimates it, objects held by finalizers take to go.
const finalizerEstimate = 15 * time.Second

// retryLimiter is kube-controller-manager's backoff for namespaces: a failing one is retried at
// least once a minute (the default controller backoff grows to 1000s), so a deletion held by
// something since fixed finishes soon after; the bucket bounds retries of all namespaces together
// to 10 a second.
func retryLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, time.Minute),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// Options tune the controller; zero values mean the defaults.
type Options struct {
	Logger *slog.Logger
	Now    func() time.Time
}

// Controller deletes the content of terminating namespaces.
type Controller struct {
	client    kubernetes.Interface
	discovery discovery.DiscoveryInterface
	metadata  metadata.Interface
	nsLister  corelisters.NamespaceLister
	synced    []cache.InformerSynced
	queue     runner.Queue
	recorder  record.EventRecorder
	log       *slog.Logger
	now       func() time.Time
}

// New wires the controller. Discovery comes from client.Discovery(); md deletes and lists any resource.
func New(client kubernetes.Interface, md metadata.Interface, nsInformer coreinformers.NamespaceInformer, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if client == nil || md == nil || nsInformer == nil || recorder == nil {
		return nil, fmt.Errorf("namespace: client, metadata client, informer and recorder are required")
	}
	c := &Controller{
		client: client, discovery: client.Discovery(), metadata: md, nsLister: nsInformer.Lister(),
		synced:   []cache.InformerSynced{nsInformer.Informer().HasSynced},
		queue:    runner.NewQueueWithRateLimiter(Name, retryLimiter()),
		recorder: recorder, log: opts.Logger, now: opts.Now,
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.now == nil {
		c.now = time.Now
	}
	if _, err := nsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue, UpdateFunc: func(_, cur any) { c.enqueue(cur) },
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run processes namespaces with the given number of workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	runner.RunRetryingForever(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
}

func (c *Controller) enqueue(obj any) {
	if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp == nil {
		return // only terminating namespaces need work
	}
	if key, ok := runner.KeyOf(obj); ok {
		c.queue.AddAfter(key, deletionGracePeriod)
	}
}

func (c *Controller) sync(ctx context.Context, name string) error {
	cached, err := c.nsLister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if cached.DeletionTimestamp == nil {
		return nil
	}
	ns := cached.DeepCopy()
	// As Kubernetes, the content goes while any spec finalizer is left, not only while ours is:
	// a namespace finalized early by hand, or created without it, must not keep its content
	// while the owners of the other finalizers finish theirs.
	if len(ns.Spec.Finalizers) == 0 {
		return c.deleteIfFinalized(ctx, ns)
	}
	res := c.deleteContent(ctx, ns)
	if err := c.updateConditions(ctx, ns, res); err != nil {
		return err
	}
	if res.err != nil {
		return res.err
	}
	if res.estimate > 0 {
		// Look again when about half the estimate has passed, as Kubernetes.
		c.queue.AddAfter(name, (res.estimate/time.Second/2+1)*time.Second)
		return nil
	}
	if !hasFinalizer(ns) {
		return nil // nothing of ours to remove (Kubernetes finalizes anyway, to no effect)
	}
	var keep []corev1.FinalizerName
	for _, f := range ns.Spec.Finalizers {
		if f != corev1.FinalizerKubernetes {
			keep = append(keep, f)
		}
	}
	ns.Spec.Finalizers = keep
	finalized, err := c.client.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("finalize namespace %s: %w", name, err)
	}
	return c.deleteIfFinalized(ctx, finalized)
}

func hasFinalizer(ns *corev1.Namespace) bool {
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			return true
		}
	}
	return false
}

// deleteIfFinalized issues the final delete once no finalizer is left (an apiserver may also remove
// the namespace by itself at finalize time; NotFound is then fine).
func (c *Controller) deleteIfFinalized(ctx context.Context, ns *corev1.Namespace) error {
	if len(ns.Spec.Finalizers) != 0 || len(ns.Finalizers) != 0 {
		return nil
	}
	uid := ns.UID
	err := c.client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete finalized namespace %s: %w", ns.Name, err)
	}
	return nil
}

type result struct {
	discoveryErr error
	parseErr     error // the first group version discovery listed that does not parse
	deleteErrs   []string
	remaining    map[string]int // resource → objects left
	finalizers   map[string]int // finalizer → objects carrying it
	// estimate is how much longer what remains should take to go: content that stays beyond
	// it, or without one, is a failure.
	estimate time.Duration
	err      error
}

// deleteContent deletes every namespaced resource in namespace and counts what is still there.
func (c *Controller) deleteContent(ctx context.Context, namespace *corev1.Namespace) result {
	ns := namespace.Name
	res := result{remaining: map[string]int{}, finalizers: map[string]int{}}
	lists, err := discovery.ServerPreferredNamespacedResources(c.discovery)
	if err != nil {
		// Partial discovery (one aggregated group down) still lets us delete the rest, but
		// the groups that failed may hold objects too: as in Kubernetes, the namespace is not
		// finalized until discovery succeeds, lest they outlive it (and reappear in a
		// namespace of the same name).
		res.discoveryErr = err
	}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			// Its objects cannot be addressed, so the namespace must wait like for a failed
			// discovery; the other groups are still emptied.
			if res.parseErr == nil {
				res.parseErr = err
			}
			continue
		}
		for _, r := range l.APIResources {
			// As Kubernetes: only what can be deleted one by one is (subresources never can).
			if strings.Contains(r.Name, "/") || !has(r.Verbs, "delete") {
				continue
			}
			gvr := gv.WithResource(r.Name)
			var estimate time.Duration
			if gvr.GroupResource() == (schema.GroupResource{Resource: "pods"}) {
				if estimate, err = c.podsEstimate(ctx, namespace); err != nil {
					res.deleteErrs = append(res.deleteErrs, err.Error())
					continue
				}
			}
			left, err := c.deleteResource(ctx, ns, gvr, r.Verbs)
			if err != nil {
				res.deleteErrs = append(res.deleteErrs, err.Error())
				continue
			}
			if left == nil || len(left.Items) == 0 {
				continue
			}
			// resource.group, as Kubernetes names it: "pods." for the core group.
			res.remaining[gvr.Resource+"."+gvr.Group] += len(left.Items)
			held := false
			for _, it := range left.Items {
				for _, f := range it.Finalizers {
					res.finalizers[f]++
					held = true
				}
			}
			switch {
			case estimate > 0:
				res.estimate = max(res.estimate, estimate)
			case held:
				res.estimate = max(res.estimate, finalizerEstimate)
			default:
				// Nothing should keep these: as Kubernetes, a failure, retried with backoff
				// (a pod whose node is gone, say, until the pod garbage collector removes it).
				res.deleteErrs = append(res.deleteErrs, fmt.Sprintf("unexpected items still remain in namespace: %s for gvr: %v", ns, gvr))
			}
		}
	}
	var errs []error
	if res.discoveryErr != nil {
		errs = append(errs, fmt.Errorf("discover namespaced resources: %w", res.discoveryErr))
	}
	if res.parseErr != nil {
		errs = append(errs, fmt.Errorf("parse discovered group versions: %w", res.parseErr))
	}
	if len(res.deleteErrs) > 0 {
		errs = append(errs, errors.New("delete namespace content: "+strings.Join(res.deleteErrs, "; ")))
	}
	res.err = errors.Join(errs...)
	return res
}

// podsEstimate is how much longer the pods of namespace may take to terminate: the longest grace
// period of those not finished, as Kubernetes estimates it, unless that much time has passed since
// the namespace was deleted.
func (c *Controller) podsEstimate(ctx context.Context, namespace *corev1.Namespace) (time.Duration, error) {
	pods, err := c.client.CoreV1().Pods(namespace.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err // as the API server worded it: NamespaceDeletionContentFailure quotes it
	}
	var estimate time.Duration
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.Spec.TerminationGracePeriodSeconds == nil {
			continue
		}
		estimate = max(estimate, time.Duration(*p.Spec.TerminationGracePeriodSeconds)*time.Second)
	}
	if c.now().Sub(namespace.DeletionTimestamp.Time) >= estimate {
		return 0, nil
	}
	return estimate, nil
}

// deleteResource deletes the objects of gvr in ns, with one deletecollection where discovery
// offers it and the server serves it, otherwise one by one, and lists what is left (nil where the
// resource cannot be listed). It stops at the first failure, which it returns as the API server
// worded it: NamespaceDeletionContentFailure lists one failure per resource, as Kubernetes'.
func (c *Controller) deleteResource(ctx context.Context, ns string, gvr schema.GroupVersionResource, verbs metav1.Verbs) (*metav1.PartialObjectMetadataList, error) {
	client := c.metadata.Resource(gvr).Namespace(ns)
	// In the background, as Kubernetes: a kind whose default is to orphan (batch/v1 Jobs) would
	// otherwise gain the orphan finalizer and wait for the garbage collector before it goes,
	// while its dependents are deleted here anyway.
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}
	collected := false
	if has(verbs, "deletecollection") {
		err := client.DeleteCollection(ctx, opts, metav1.ListOptions{})
		if err != nil && !ignorable(err) {
			return nil, err
		}
		collected = err == nil
	}
	if !has(verbs, "list") {
		return nil, nil
	}
	if !collected {
		items, err := client.List(ctx, metav1.ListOptions{})
		if ignorable(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		for _, it := range items.Items {
			if err := client.Delete(ctx, it.Name, opts); err != nil && !ignorable(err) {
				return nil, err
			}
		}
	}
	left, err := client.List(ctx, metav1.ListOptions{})
	if ignorable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return left, nil
}

func has(verbs metav1.Verbs, v string) bool {
	for _, x := range verbs {
		if x == v {
			return true
		}
	}
	return false
}

// ignorable: the resource vanished or does not support the verb; nothing to delete there.
func ignorable(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err)
}

// updateConditions reports deletion progress on the namespace with Kubernetes' condition types.
func (c *Controller) updateConditions(ctx context.Context, ns *corev1.Namespace, res result) error {
	now := metav1.NewTime(c.now())
	// The messages are kube-controller-manager's, word for word: what
	// `kubectl describe namespace` shows while a deletion is stuck.
	want := []corev1.NamespaceCondition{
		cond(corev1.NamespaceDeletionDiscoveryFailure, res.discoveryErr != nil, "DiscoveryFailed", discoveryMessage(res.discoveryErr), "ResourcesDiscovered", "All resources successfully discovered"),
		cond(corev1.NamespaceDeletionGVParsingFailure, res.parseErr != nil, "GroupVersionParsingFailed", errMessage(res.parseErr), "ParsedGroupVersions", "All legacy kube types successfully parsed"),
		cond(corev1.NamespaceDeletionContentFailure, len(res.deleteErrs) > 0, "ContentDeletionFailed", deleteErrsMessage(res.deleteErrs), "ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
		cond(corev1.NamespaceContentRemaining, len(res.remaining) > 0, "SomeResourcesRemain", "Some resources are remaining: "+countList(res.remaining, "%s has %d resource instances"), "ContentRemoved", "All content successfully removed"),
		cond(corev1.NamespaceFinalizersRemaining, len(res.finalizers) > 0, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: "+countList(res.finalizers, "%s in %d resource instances"), "ContentHasNoFinalizers", "All content-preserving finalizers finished"),
	}
	next := ns.DeepCopy()
	next.Status.Phase = corev1.NamespaceTerminating
	for _, w := range want {
		found := false
		for i := range next.Status.Conditions {
			cur := &next.Status.Conditions[i]
			if cur.Type != w.Type {
				continue
			}
			found = true
			if cur.Status != w.Status {
				cur.LastTransitionTime = now
			}
			cur.Status, cur.Reason, cur.Message = w.Status, w.Reason, w.Message
		}
		if !found {
			w.LastTransitionTime = now
			next.Status.Conditions = append(next.Status.Conditions, w)
		}
	}
	if apiequality.Semantic.DeepEqual(ns.Status, next.Status) {
		return nil
	}
	updated, err := c.client.CoreV1().Namespaces().UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("update status of namespace %s: %w", ns.Name, err)
	}
	*ns = *updated
	return nil
}

func cond(t corev1.NamespaceConditionType, bad bool, badReason, badMsg, okReason, okMsg string) corev1.NamespaceCondition {
	if bad {
		return corev1.NamespaceCondition{Type: t, Status: corev1.ConditionTrue, Reason: badReason, Message: badMsg}
	}
	return corev1.NamespaceCondition{Type: t, Status: corev1.ConditionFalse, Reason: okReason, Message: okMsg}
}

// discoveryMessage says which API groups could not be listed.
func discoveryMessage(err error) string {
	var groups *discovery.ErrGroupDiscoveryFailed
	switch {
	case err == nil:
		return ""
	case errors.As(err, &groups):
		return fmt.Sprintf("Discovery failed for some groups, %d failing: %v", len(groups.Groups), err)
	default:
		return err.Error()
	}
}

func errMessage(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// deleteErrsMessage counts and lists the failed deletes, sorted so that the
// same failures leave the condition unchanged.
func deleteErrsMessage(errs []string) string {
	sorted := slices.Sorted(slices.Values(errs))
	return fmt.Sprintf("Failed to delete all resource types, %d remaining: %s", len(sorted), strings.Join(sorted, ", "))
}

// countList renders {"pods.": 2} with format "%s has %d resource instances"
// as "pods. has 2 resource instances", sorted, comma-separated.
func countList(m map[string]int, format string) string {
	parts := make([]string, 0, len(m))
	for k, n := range m {
		parts = append(parts, fmt.Sprintf(format, k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
