package disruption

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	policyinformers "k8s.io/client-go/informers/policy/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/podstate"
	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs, events and the manager.
const Name = "disruption-controller"

// DeletionTimeout is how long a granted eviction keeps its pod out of currentHealthy when the pod's
// deletion is never observed (Kubernetes' value).
const DeletionTimeout = 2 * time.Minute

// Event reasons, as Kubernetes'.
const (
	ReasonNoPods        = "NoPods"
	ReasonExpectedCount = "CalculateExpectedPodCountFailed"
)

// Options tune the controller; zero values mean the defaults.
type Options struct {
	Logger *slog.Logger
	Now    func() time.Time
}

// Informers the controller reads.
type Informers struct {
	PDBs         policyinformers.PodDisruptionBudgetInformer
	Pods         coreinformers.PodInformer
	ReplicaSets  appsinformers.ReplicaSetInformer
	Deployments  appsinformers.DeploymentInformer
	StatefulSets appsinformers.StatefulSetInformer
}

// Controller keeps PodDisruptionBudget status.
type Controller struct {
	client    kubernetes.Interface
	pdbLister policylisters.PodDisruptionBudgetLister
	podLister corelisters.PodLister
	rsLister  appslisters.ReplicaSetLister
	dLister   appslisters.DeploymentLister
	ssLister  appslisters.StatefulSetLister
	synced    []cache.InformerSynced
	queue     runner.Queue
	recorder  record.EventRecorder
	log       *slog.Logger
	now       func() time.Time
}

// New wires the controller to the informers. Call it before the informer factory is started.
func New(client kubernetes.Interface, inf Informers, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if client == nil || inf.PDBs == nil || inf.Pods == nil || inf.ReplicaSets == nil || inf.Deployments == nil || inf.StatefulSets == nil || recorder == nil {
		return nil, fmt.Errorf("disruption: client, informers and recorder are required")
	}
	c := &Controller{
		client: client, pdbLister: inf.PDBs.Lister(), podLister: inf.Pods.Lister(), rsLister: inf.ReplicaSets.Lister(),
		dLister: inf.Deployments.Lister(), ssLister: inf.StatefulSets.Lister(),
		synced: []cache.InformerSynced{inf.PDBs.Informer().HasSynced, inf.Pods.Informer().HasSynced, inf.ReplicaSets.Informer().HasSynced,
			inf.Deployments.Informer().HasSynced, inf.StatefulSets.Informer().HasSynced},
		queue:    runner.NewQueue(Name),
		recorder: recorder, log: opts.Logger, now: opts.Now,
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.now == nil {
		c.now = time.Now
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
	for _, i := range []cache.SharedIndexInformer{inf.ReplicaSets.Informer(), inf.Deployments.Informer(), inf.StatefulSets.Informer()} {
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

// Run processes budgets with the given number of workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	runner.Run(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
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
	pdbs, err := c.pdbLister.PodDisruptionBudgets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pdb := range pdbs {
		if sel, err := selectorOf(pdb); err == nil && sel.Matches(labels.Set(pod.Labels)) {
			c.enqueue(pdb)
		}
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
	expected, desired, err := c.budget(pdb, pods)
	if err != nil {
		c.recorder.Eventf(pdb, corev1.EventTypeWarning, ReasonExpectedCount, "Failed to calculate the number of expected pods: %v", err)
		return c.fail(ctx, pdb, err.Error())
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

// budget computes expectedPods and desiredHealthy.
func (c *Controller) budget(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) (expected, desired int32, err error) {
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		if expected, err = c.expectedScale(pods); err != nil {
			return 0, 0, err
		}
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, err
		}
		return expected, max(0, expected-int32(maxUnavailable)), nil
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.Int:
		return int32(len(pods)), pdb.Spec.MinAvailable.IntVal, nil
	case pdb.Spec.MinAvailable != nil:
		if expected, err = c.expectedScale(pods); err != nil {
			return 0, 0, err
		}
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, 0, err
		}
		return expected, int32(minAvailable), nil
	}
	return int32(len(pods)), 0, nil
}

// expectedScale sums the replicas of the controllers of the pods (each controller once): a
// Deployment through its ReplicaSets, a bare ReplicaSet, a StatefulSet.
func (c *Controller) expectedScale(pods []*corev1.Pod) (int32, error) {
	seen := map[types.UID]bool{}
	var total int32
	for _, p := range pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil {
			return 0, fmt.Errorf("found no controller for pod %q", p.Name)
		}
		uid, replicas, err := c.scaleOf(p.Namespace, ref)
		if err != nil {
			return 0, err
		}
		if !seen[uid] {
			seen[uid] = true
			total += replicas
		}
	}
	return total, nil
}

func (c *Controller) scaleOf(ns string, ref *metav1.OwnerReference) (types.UID, int32, error) {
	replicas := func(p *int32) int32 {
		if p == nil {
			return 1
		}
		return *p
	}
	switch {
	case ref.Kind == "ReplicaSet" && ref.APIVersion == "apps/v1":
		rs, err := c.rsLister.ReplicaSets(ns).Get(ref.Name)
		if err != nil || rs.UID != ref.UID {
			return "", 0, fmt.Errorf("replicaset %s not found", ref.Name)
		}
		if d := metav1.GetControllerOf(rs); d != nil && d.Kind == "Deployment" && d.APIVersion == "apps/v1" {
			dep, err := c.dLister.Deployments(ns).Get(d.Name)
			if err != nil || dep.UID != d.UID {
				return "", 0, fmt.Errorf("deployment %s not found", d.Name)
			}
			return dep.UID, replicas(dep.Spec.Replicas), nil
		}
		return rs.UID, replicas(rs.Spec.Replicas), nil
	case ref.Kind == "StatefulSet" && ref.APIVersion == "apps/v1":
		ss, err := c.ssLister.StatefulSets(ns).Get(ref.Name)
		if err != nil || ss.UID != ref.UID {
			return "", 0, fmt.Errorf("statefulset %s not found", ref.Name)
		}
		return ss.UID, replicas(ss.Spec.Replicas), nil
	}
	return "", 0, fmt.Errorf("pods controlled by %s %s have no scale this controller knows", ref.Kind, ref.Name)
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
			c.log.Info("eviction granted but pod not deleted in time", "pdb", pdb.Namespace+"/"+pdb.Name, "pod", name)
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

// fail reports a budget that cannot be computed: no disruptions allowed.
func (c *Controller) fail(ctx context.Context, pdb *policyv1.PodDisruptionBudget, msg string) error {
	st := pdb.Status.DeepCopy()
	st.DisruptionsAllowed = 0
	st.ObservedGeneration = pdb.Generation
	setCondition(st, metav1.ConditionFalse, policyv1.SyncFailedReason, msg, pdb.Generation)
	return c.writeStatus(ctx, pdb, st)
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
