package disruption

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	policyinformers "k8s.io/client-go/informers/policy/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/podstate"
	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs and the manager.
const Name = "disruption-controller"

// EventSource is the component its Events come from, as kube-controller-manager
// names it (the From column of `kubectl describe`).
const EventSource = "controllermanager"

// DeletionTimeout is how long a granted eviction keeps its pod out of currentHealthy when the pod's
// deletion is never observed (Kubernetes' value).
const DeletionTimeout = 2 * time.Minute

// StalePodDisruptionTimeout is how long a DisruptionTarget condition may stand on a pod that is
// not being deleted before the controller sets it back to False (Kubernetes' value): the
// eviction or preemption that set it did not go through.
const StalePodDisruptionTimeout = 2 * time.Minute

// Event reasons, as Kubernetes'.
const (
	ReasonNoPods        = "NoPods"
	ReasonExpectedCount = "CalculateExpectedPodCountFailed"
	ReasonUnmanagedPods = "UnmanagedPods"
	// On a pod: an eviction its budget granted was not followed by its
	// deletion within DeletionTimeout.
	ReasonNotDeleted = "NotDeleted"
	// On a pod: more than one budget selects it, so the eviction API
	// refuses to evict it.
	ReasonMultipleBudgets = "MultiplePodDisruptionBudgets"
)

// staleQueueName names the queue of pods whose DisruptionTarget condition may be stale, as
// kube-controller-manager names it in its workqueue metrics.
const staleQueueName = "stale_pod_disruption"

// mapperResetInterval bounds how often a controller kind the REST mapper does not know makes it
// read discovery again (a custom resource defined since): kube-controller-manager resets its
// mapper every 30 seconds.
const mapperResetInterval = 30 * time.Second

// Options tune the controller; zero values mean the defaults.
type Options struct {
	Logger *slog.Logger
	Now    func() time.Time
	// Discovery lets the controller count the pods of other controllers (a custom resource)
	// through their scale subresource, as Kubernetes' disruption controller does. Without it
	// only Deployments, ReplicaSets, ReplicationControllers and StatefulSets are known.
	Discovery discovery.DiscoveryInterface
	// Mapper and Scales replace what is built from Discovery (tests).
	Mapper meta.RESTMapper
	Scales scale.ScalesGetter
}

// Informers the controller reads.
type Informers struct {
	PDBs         policyinformers.PodDisruptionBudgetInformer
	Pods         coreinformers.PodInformer
	ReplicaSets  appsinformers.ReplicaSetInformer
	Deployments  appsinformers.DeploymentInformer
	StatefulSets appsinformers.StatefulSetInformer
	// ReplicationControllers are read from their cache, as Kubernetes' disruption
	// controller reads them (not through their scale subresource).
	ReplicationControllers coreinformers.ReplicationControllerInformer
}

// Controller keeps PodDisruptionBudget status.
type Controller struct {
	client    kubernetes.Interface
	pdbLister policylisters.PodDisruptionBudgetLister
	podLister corelisters.PodLister
	rsLister  appslisters.ReplicaSetLister
	dLister   appslisters.DeploymentLister
	ssLister  appslisters.StatefulSetLister
	rcLister  corelisters.ReplicationControllerLister
	synced    []cache.InformerSynced
	queue     runner.Queue
	stale     runner.Queue // pods, "namespace/name", whose DisruptionTarget may be stale
	recorder  record.EventRecorder
	log       *slog.Logger
	now       func() time.Time

	// The scale subresource of other controllers; nil without Options.Discovery.
	discovery discovery.DiscoveryInterface
	mapper    meta.RESTMapper
	scales    scale.ScalesGetter
	resetMu   sync.Mutex
	lastReset time.Time
}

// New wires the controller to the informers. Call it before the informer factory is started.
func New(client kubernetes.Interface, inf Informers, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if client == nil || inf.PDBs == nil || inf.Pods == nil || inf.ReplicaSets == nil || inf.Deployments == nil || inf.StatefulSets == nil ||
		inf.ReplicationControllers == nil || recorder == nil {
		return nil, fmt.Errorf("disruption: client, informers and recorder are required")
	}
	c := &Controller{
		client: client, pdbLister: inf.PDBs.Lister(), podLister: inf.Pods.Lister(), rsLister: inf.ReplicaSets.Lister(),
		dLister: inf.Deployments.Lister(), ssLister: inf.StatefulSets.Lister(), rcLister: inf.ReplicationControllers.Lister(),
		synced: []cache.InformerSynced{inf.PDBs.Informer().HasSynced, inf.Pods.Informer().HasSynced, inf.ReplicaSets.Informer().HasSynced,
			inf.Deployments.Informer().HasSynced, inf.StatefulSets.Informer().HasSynced, inf.ReplicationControllers.Informer().HasSynced},
		queue: runner.NewQueue(Name), stale: runner.NewQueue(staleQueueName),
		recorder: recorder, log: opts.Logger, now: opts.Now,
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.now == nil {
		c.now = time.Now
	}
	if opts.Discovery != nil {
		c.discovery, c.mapper, c.scales = opts.Discovery, opts.Mapper, opts.Scales
		cached := memory.NewMemCacheClient(opts.Discovery)
		if c.mapper == nil {
			c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(cached)
		}
		if c.scales == nil {
			c.scales = scale.New(opts.Discovery.RESTClient(), c.mapper, dynamic.LegacyAPIPathResolverFunc,
				scale.NewDiscoveryScaleKindResolver(cached))
		}
	}
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{inf.PDBs.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: c.enqueue, UpdateFunc: func(_, cur any) { c.enqueue(cur) }}},
		{inf.Pods.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: c.podChanged, UpdateFunc: func(_, cur any) { c.podChanged(cur) }, DeleteFunc: c.podChanged,
		}},
	}
	// A controller's scale changes the expected pod count of budgets in its namespace.
	for _, i := range []cache.SharedIndexInformer{inf.ReplicaSets.Informer(), inf.Deployments.Informer(), inf.StatefulSets.Informer(), inf.ReplicationControllers.Informer()} {
		handlers = append(handlers, struct {
			inf cache.SharedIndexInformer
			h   cache.ResourceEventHandler
		}{i, cache.ResourceEventHandlerFuncs{
			AddFunc: c.namespaceChanged, UpdateFunc: func(_, cur any) { c.namespaceChanged(cur) }, DeleteFunc: c.namespaceChanged,
		}})
	}
	for _, x := range handlers {
		if _, err := x.inf.AddEventHandler(x.h); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run processes budgets with the given number of workers, and stale
// DisruptionTarget conditions with one, until ctx ends. A budget or pod whose
// sync fails is retried with backoff until it succeeds, as Kubernetes'
// disruption controller retries both: a budget's status left stale would
// allow or refuse evictions wrongly.
func (c *Controller) Run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	wg.Go(func() { runner.RunRetryingForever(ctx, staleQueueName, c.stale, 1, c.syncStalePod, c.log, c.synced...) })
	runner.RunRetryingForever(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
	wg.Wait()
}

func (c *Controller) enqueue(obj any) {
	if key, ok := runner.KeyOf(obj); ok {
		c.queue.Add(key)
	}
}

func unwrap(obj any) metav1.Object {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, _ := obj.(metav1.Object)
	return m
}

func (c *Controller) podChanged(obj any) {
	pod, ok := unwrap(obj).(*corev1.Pod)
	if !ok {
		return
	}
	if _, isPod := obj.(*corev1.Pod); isPod {
		if wait, stale := c.staleDisruption(pod); stale {
			if key, ok := runner.KeyOf(pod); ok {
				c.stale.AddAfter(key, wait)
			}
		}
	}
	pdbs, err := c.pdbLister.PodDisruptionBudgets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	var names []string
	for _, pdb := range pdbs {
		if sel, err := selectorOf(pdb); err == nil && sel.Matches(labels.Set(pod.Labels)) {
			c.enqueue(pdb)
			names = append(names, pdb.Name)
		}
	}
	if _, live := obj.(*corev1.Pod); live && len(names) > 1 {
		// Both budgets are counted, but no eviction can go through: say
		// so on the pod, as Kubernetes does, before a drain finds out.
		slices.Sort(names)
		c.recorder.Eventf(pod, corev1.EventTypeWarning, ReasonMultipleBudgets,
			"Pod is selected by %d PodDisruptionBudgets (%s); the eviction API cannot evict a pod with more than one", len(names), strings.Join(names, ", "))
	}
}

func (c *Controller) namespaceChanged(obj any) {
	m := unwrap(obj)
	if m == nil {
		return
	}
	pdbs, err := c.pdbLister.PodDisruptionBudgets(m.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pdb := range pdbs {
		c.enqueue(pdb)
	}
}

// selectorOf: a nil selector selects nothing, an empty one every pod (policy/v1).
func selectorOf(pdb *policyv1.PodDisruptionBudget) (labels.Selector, error) {
	if pdb.Spec.Selector == nil {
		return labels.Nothing(), nil
	}
	return metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.pdbLister.PodDisruptionBudgets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	pdb := cached.DeepCopy()
	sel, err := selectorOf(pdb)
	if err != nil {
		return c.fail(ctx, pdb, fmt.Sprintf("invalid selector: %v", err))
	}
	pods, err := c.podLister.Pods(ns).List(sel)
	if err != nil {
		return err
	}
	if len(pods) == 0 && (pdb.Status.ObservedGeneration != pdb.Generation || pdb.Status.ExpectedPods != 0) {
		c.recorder.Event(pdb, corev1.EventTypeNormal, ReasonNoPods, "No matching pods found")
	}
	expected, desired, unmanaged, err := c.budget(ctx, pdb, pods)
	if err != nil {
		c.recorder.Eventf(pdb, corev1.EventTypeWarning, ReasonExpectedCount, "Failed to calculate the number of expected pods: %v", err)
		return c.fail(ctx, pdb, err.Error())
	}
	if unmanaged > 0 {
		// Kubernetes' words: the budget is computed without them, not refused.
		c.recorder.Eventf(pdb, corev1.EventTypeWarning, ReasonUnmanagedPods, "Pods selected by this PodDisruptionBudget (selector: %v) were found "+
			"to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. "+
			"To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.", pdb.Spec.Selector)
	}
	now := c.now()
	disrupted, recheck := c.disruptedPods(pdb, pods, now)
	healthy := int32(0)
	for _, p := range pods {
		if _, gone := disrupted[p.Name]; gone {
			continue
		}
		if p.DeletionTimestamp == nil && podstate.IsReady(p) {
			healthy++
		}
	}
	st := pdb.Status.DeepCopy()
	st.ExpectedPods, st.DesiredHealthy, st.CurrentHealthy = expected, desired, healthy
	st.DisruptionsAllowed = max(0, healthy-desired)
	if expected <= 0 {
		// A budget over no expected pods allows nothing, so that its first pods
		// are safe before it is computed again.
		st.DisruptionsAllowed = 0
	}
	st.DisruptedPods = disrupted
	st.ObservedGeneration = pdb.Generation
	if st.DisruptionsAllowed > 0 {
		setCondition(st, metav1.ConditionTrue, policyv1.SufficientPodsReason, "", pdb.Generation)
	} else {
		setCondition(st, metav1.ConditionFalse, policyv1.InsufficientPodsReason, "", pdb.Generation)
	}
	if err := c.writeStatus(ctx, pdb, st); err != nil {
		return err
	}
	if recheck > 0 {
		c.queue.AddAfter(key, recheck)
	}
	return nil
}

// budget computes expectedPods and desiredHealthy, and counts the pods with no
// controller that a scale-based budget had to leave out. A budget with
// neither minAvailable nor maxUnavailable expects nothing, as in Kubernetes.
func (c *Controller) budget(ctx context.Context, pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) (expected, desired int32, unmanaged int, err error) {
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		if expected, unmanaged, err = c.expectedScale(ctx, pods); err != nil {
			return 0, 0, 0, err
		}
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, 0, err
		}
		return expected, max(0, expected-int32(maxUnavailable)), unmanaged, nil
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.Int:
		return int32(len(pods)), pdb.Spec.MinAvailable.IntVal, 0, nil
	case pdb.Spec.MinAvailable != nil:
		if expected, unmanaged, err = c.expectedScale(ctx, pods); err != nil {
			return 0, 0, 0, err
		}
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, 0, 0, err
		}
		return expected, int32(minAvailable), unmanaged, nil
	}
	return 0, 0, 0, nil
}

// expectedScale sums the replicas of the controllers of the pods (each controller once): a
// Deployment through its ReplicaSets, a bare ReplicaSet, a StatefulSet, any other kind through
// its scale subresource. Pods without a controller are counted apart and left out.
func (c *Controller) expectedScale(ctx context.Context, pods []*corev1.Pod) (total int32, unmanaged int, err error) {
	seen := map[types.UID]bool{}
	for _, p := range pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil {
			unmanaged++
			continue
		}
		uid, replicas, err := c.scaleOf(ctx, p.Namespace, ref)
		if err != nil {
			return 0, 0, err
		}
		if !seen[uid] {
			seen[uid] = true
			total += replicas
		}
	}
	return total, unmanaged, nil
}

func (c *Controller) scaleOf(ctx context.Context, ns string, ref *metav1.OwnerReference) (types.UID, int32, error) {
	replicas := func(p *int32) int32 {
		if p == nil {
			return 1
		}
		return *p
	}
	switch {
	case isKind(ref, "ReplicaSet", "apps", "extensions"):
		rs, err := c.rsLister.ReplicaSets(ns).Get(ref.Name)
		if err != nil || rs.UID != ref.UID {
			return "", 0, fmt.Errorf("replicaset %s not found", ref.Name)
		}
		if d := metav1.GetControllerOf(rs); d != nil && isKind(d, "Deployment", "apps", "extensions") {
			// A Deployment that is gone (its ReplicaSets not yet
			// collected) leaves the ReplicaSet's own replicas, as
			// Kubernetes, which then reads the ReplicaSet's scale, counts.
			if dep, err := c.dLister.Deployments(ns).Get(d.Name); err == nil && dep.UID == d.UID {
				return dep.UID, replicas(dep.Spec.Replicas), nil
			}
		}
		return rs.UID, replicas(rs.Spec.Replicas), nil
	case isKind(ref, "ReplicationController", ""):
		rc, err := c.rcLister.ReplicationControllers(ns).Get(ref.Name)
		if err != nil || rc.UID != ref.UID {
			return "", 0, fmt.Errorf("replicationcontroller %s not found", ref.Name)
		}
		return rc.UID, replicas(rc.Spec.Replicas), nil
	case isKind(ref, "StatefulSet", "apps"):
		ss, err := c.ssLister.StatefulSets(ns).Get(ref.Name)
		if err != nil || ss.UID != ref.UID {
			return "", 0, fmt.Errorf("statefulset %s not found", ref.Name)
		}
		return ss.UID, replicas(ss.Spec.Replicas), nil
	}
	if c.scales == nil {
		return "", 0, fmt.Errorf("pods controlled by %s %s have no scale this controller knows", ref.Kind, ref.Name)
	}
	return c.subresourceScale(ctx, ns, ref)
}

// isKind says whether ref names kind in one of groups, in any version: a reference written by an
// older client (extensions/v1beta1, apps/v1beta2) names the same object the apps/v1 caches hold, and
// Kubernetes' disruption controller matches references so.
func isKind(ref *metav1.OwnerReference, kind string, groups ...string) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && ref.Kind == kind && slices.Contains(groups, gv.Group)
}

// subresourceScale reads the desired replicas of any other controller from its scale
// subresource (autoscaling/v1 Scale), as Kubernetes does for custom resources. A controller that is gone, or replaced under its name, is not found.
func (c *Controller) subresourceScale(ctx context.Context, ns string, ref *metav1.OwnerReference) (types.UID, int32, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "", 0, fmt.Errorf("pods controlled by %s %s: %w", ref.Kind, ref.Name, err)
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	mapping, err := c.mapper.RESTMapping(gk, gv.Version)
	if meta.IsNoMatchError(err) && c.resetMapper() {
		mapping, err = c.mapper.RESTMapping(gk, gv.Version)
	}
	if err != nil {
		return "", 0, fmt.Errorf("pods controlled by %s %s: %w", ref.Kind, ref.Name, err)
	}
	gr := mapping.Resource.GroupResource()
	sc, err := c.scales.Scales(ns).Get(ctx, gr, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// Not found is also the answer for a resource without a scale subresource: tell the two apart.
		if ok, derr := c.hasScale(mapping.Resource); derr != nil {
			return "", 0, derr
		} else if !ok {
			return "", 0, fmt.Errorf("%s does not implement the scale subresource", gr)
		}
		return "", 0, fmt.Errorf("%s %s not found", gr, ref.Name)
	}
	if err != nil {
		return "", 0, err
	}
	if sc.UID != ref.UID {
		return "", 0, fmt.Errorf("%s %s not found", gr, ref.Name)
	}
	return sc.UID, sc.Spec.Replicas, nil
}

// hasScale says whether discovery lists a scale subresource for the resource.
func (c *Controller) hasScale(gvr schema.GroupVersionResource) (bool, error) {
	list, err := c.discovery.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource+"/scale" {
			return true, nil
		}
	}
	return false, nil
}

// resetMapper makes the REST mapper read discovery again, at most once per
// mapperResetInterval, and says whether it did.
func (c *Controller) resetMapper() bool {
	r, ok := c.mapper.(meta.ResettableRESTMapper)
	if !ok {
		return false
	}
	c.resetMu.Lock()
	defer c.resetMu.Unlock()
	if now := time.Now(); now.Sub(c.lastReset) >= mapperResetInterval {
		c.lastReset = now
		r.Reset()
		return true
	}
	return false
}

// disruptedPods keeps the granted evictions whose pods are still there, undeleted and within the
// timeout, and says when the oldest one expires.
func (c *Controller) disruptedPods(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, now time.Time) (map[string]metav1.Time, time.Duration) {
	if len(pdb.Status.DisruptedPods) == 0 {
		return nil, 0
	}
	byName := map[string]*corev1.Pod{}
	for _, p := range pods {
		byName[p.Name] = p
	}
	out := map[string]metav1.Time{}
	var recheck time.Duration
	for name, at := range pdb.Status.DisruptedPods {
		p, ok := byName[name]
		if !ok || p.DeletionTimestamp != nil {
			continue // its deletion was observed
		}
		expiry := at.Add(DeletionTimeout)
		if !now.Before(expiry) {
			// Said on the pod, as Kubernetes does: whoever evicted it
			// (kubectl drain, an autoscaler) may wait on a pod that stays.
			c.log.Info("eviction granted but pod not deleted in time", "pdb", pdb.Namespace+"/"+pdb.Name, "pod", name)
			c.recorder.Eventf(p, corev1.EventTypeWarning, ReasonNotDeleted,
				"PodDisruptionBudget %s/%s granted this pod's eviction at %s, but the pod was not deleted within %v",
				pdb.Namespace, pdb.Name, at.UTC().Format(time.RFC3339), DeletionTimeout)
			continue
		}
		out[name] = at
		if left := expiry.Sub(now); recheck == 0 || left < recheck {
			recheck = left
		}
	}
	if len(out) == 0 {
		return nil, 0
	}
	return out, recheck
}

// fail reports a budget that cannot be computed: no disruptions allowed. The
// observed generation stays where it was, as the counts do: the spec that
// failed has not been processed, and evictions answer "still being processed".
func (c *Controller) fail(ctx context.Context, pdb *policyv1.PodDisruptionBudget, msg string) error {
	st := pdb.Status.DeepCopy()
	st.DisruptionsAllowed = 0
	setCondition(st, metav1.ConditionFalse, policyv1.SyncFailedReason, msg, st.ObservedGeneration)
	return c.writeStatus(ctx, pdb, st)
}

// staleDisruption says whether the pod carries a DisruptionTarget condition
// that will be stale (its pod not deleted) and how long until it is. The
// kubelet's own (TerminationByKubelet) and those of finished pods are left
// alone, as Kubernetes does.
func (c *Controller) staleDisruption(pod *corev1.Pod) (time.Duration, bool) {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0, false
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type != corev1.DisruptionTarget {
			continue
		}
		if cond.Status != corev1.ConditionTrue || cond.Reason == corev1.PodReasonTerminationByKubelet {
			return 0, false
		}
		return max(0, StalePodDisruptionTimeout-c.now().Sub(cond.LastTransitionTime.Time)), true
	}
	return 0, false
}

// syncStalePod sets a stale DisruptionTarget condition back to False: the
// eviction, preemption or taint eviction that set it did not delete the pod,
// and a Job's podFailurePolicy must not take a later failure for a disruption.
func (c *Controller) syncStalePod(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := c.podLister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	wait, stale := c.staleDisruption(pod)
	if !stale {
		return nil
	}
	if wait > 0 {
		c.stale.AddAfter(key, wait)
		return nil
	}
	next := pod.DeepCopy()
	for i := range next.Status.Conditions {
		if cond := &next.Status.Conditions[i]; cond.Type == corev1.DisruptionTarget {
			*cond = corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(c.now())}
		}
	}
	if _, err := c.client.CoreV1().Pods(ns).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reset the stale DisruptionTarget of pod %s: %w", key, err)
	}
	c.log.Info("reset stale DisruptionTarget condition to False", "pod", key)
	return nil
}

func setCondition(st *policyv1.PodDisruptionBudgetStatus, status metav1.ConditionStatus, reason, message string, gen int64) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != policyv1.DisruptionAllowedCondition {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = metav1.Now()
		}
		c.Status, c.Reason, c.Message, c.ObservedGeneration = status, reason, message, gen
		return
	}
	st.Conditions = append(st.Conditions, metav1.Condition{
		Type: policyv1.DisruptionAllowedCondition, Status: status, Reason: reason, Message: message,
		ObservedGeneration: gen, LastTransitionTime: metav1.Now(),
	})
}

func (c *Controller) writeStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget, st *policyv1.PodDisruptionBudgetStatus) error {
	if apiequality.Semantic.DeepEqual(&pdb.Status, st) {
		return nil
	}
	next := pdb.DeepCopy()
	next.Status = *st
	_, err := c.client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		// A conflict usually means an eviction spent from the budget meanwhile: recompute.
		return fmt.Errorf("update status of pdb %s/%s: %w", pdb.Namespace, pdb.Name, err)
	}
	return nil
}
