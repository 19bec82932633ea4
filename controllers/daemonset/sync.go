package daemonset

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"

	"github.com/skiffkube/skiff/controllers/controllerref"
	"github.com/skiffkube/skiff/controllers/podstate"
	"github.com/skiffkube/skiff/controllers/slowstart"
)

// Event reasons, as Kubernetes'.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedCreate     = "FailedCreate"
	ReasonFailedDelete     = "FailedDelete"
	ReasonFailedDaemonPod  = "FailedDaemonPod"
	// ReasonSucceededDaemonPod: a daemon pod exited (e.g. stopped by a node shutdown) and is replaced.
	ReasonSucceededDaemonPod = "SucceededDaemonPod"
)

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.dsLister.DaemonSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.exp.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	ds := cached.DeepCopy()
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || selector.Empty() {
		c.recorder.Eventf(ds, corev1.EventTypeWarning, "InvalidSelector", "invalid selector: %v", err)
		return nil
	}
	satisfied := c.exp.Satisfied(key)
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		return err
	}
	pods, err := c.claimPods(ctx, ds, selector)
	if err != nil {
		return err
	}
	if ds.DeletionTimestamp != nil {
		return nil // the garbage collector removes the pods
	}
	hist, err := c.syncHistory(ctx, ds, selector, pods)
	if err != nil {
		return err
	}
	hash := hist.hash()

	byNode := map[string][]*corev1.Pod{}
	// Nodes whose daemon pod is still terminating. As in Kubernetes, without maxSurge the
	// replacement waits until the old pod is gone, so a daemon holding host ports, sockets or
	// devices never overlaps with its successor; with maxSurge it may start beside it.
	terminatingOn := map[string]bool{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil && podstate.IsTerminal(p) {
			// As in Kubernetes, a finished pod being deleted has nothing left to stop: a
			// finalizer may keep it for long, and its node gets a replacement meanwhile.
			continue
		}
		if p.DeletionTimestamp != nil {
			terminatingOn[targetNode(p)] = true
			continue
		}
		byNode[targetNode(p)] = append(byNode[targetNode(p)], p)
	}
	var create []string
	var remove []*corev1.Pod
	for _, node := range nodes {
		shouldRun, keep := placement(ds, node)
		var running []*corev1.Pod
		finished := false // a failed or succeeded pod is still on the node
		for _, p := range byNode[node.Name] {
			done := p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
			finished = finished || done
			switch {
			case done && !satisfied:
				// As in Kubernetes, finished pods are dealt with only by a sync that acts: one
				// waiting for earlier creations and deletions neither reports them nor spends
				// their node's back-off on a deletion it does not make.
			case p.Status.Phase == corev1.PodFailed:
				if !keep {
					remove = append(remove, p)
					break
				}
				// A node that fails every daemon pod (a kubelet rejecting it, a crashing
				// init) would otherwise see delete and create in a hot loop: as in
				// Kubernetes, each replacement on the node waits twice as long, up to 15 min.
				bk := failedBackoffKey(ds, node.Name)
				now := c.now()
				if c.failedBackoff.IsInBackOffSinceUpdate(bk, now) {
					c.queue.AddAfter(key, c.failedBackoff.Get(bk))
					break
				}
				c.failedBackoff.Next(bk, now)
				c.recorder.Eventf(ds, corev1.EventTypeWarning, ReasonFailedDaemonPod, "Found failed daemon pod %s/%s on node %s, will try to kill it", p.Namespace, p.Name, node.Name)
				remove = append(remove, p)
			case p.Status.Phase == corev1.PodSucceeded:
				// Daemon pods restart Always, so this one was stopped from outside (node shutdown,
				// eviction); Kubernetes deletes and replaces it like a failed one, and reports it
				// only on a node that keeps its daemon pod (elsewhere every pod just goes).
				if keep {
					c.recorder.Eventf(ds, corev1.EventTypeNormal, ReasonSucceededDaemonPod, "Found succeeded daemon pod %s/%s on node %s, will try to delete it", p.Namespace, p.Name, node.Name)
				}
				remove = append(remove, p)
			default:
				running = append(running, p)
			}
		}
		switch {
		case shouldRun && len(running) == 0 && finished && !allowsSurge(ds):
			// Without surge, as in Kubernetes, the replacement follows once the finished pod
			// is being deleted (that event brings the next sync), or once its back-off ends.
			// With surge it is created now, beside a failed pod its back-off keeps: surging,
			// a node needs one pod that has not finished.
		case shouldRun && len(running) == 0 && terminatingOn[node.Name] && !allowsSurge(ds):
			// wait for the old pod to be gone
		case shouldRun && len(running) == 0:
			create = append(create, node.Name)
		case keep && len(running) > 1 && !allowsSurge(ds):
			// As in Kubernetes, the oldest pod stays and the rest go, whatever their revision.
			oldestFirst(running)
			remove = append(remove, running[1:]...)
		case keep && len(running) > 1:
			// With surge, as in Kubernetes, a node keeps its oldest current pod and its oldest old
			// one; the old one goes once it is not ready or the current one is available.
			oldestFirst(running)
			var current, old *corev1.Pod
			for _, p := range running {
				switch {
				case p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash && current == nil:
					current = p
				case p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != hash && old == nil:
					old = p
				default:
					remove = append(remove, p)
				}
			}
			if current != nil && old != nil && (!podstate.IsReady(old) || podstate.IsAvailable(current, ds.Spec.MinReadySeconds, c.now())) {
				remove = append(remove, old)
			}
		case !keep:
			remove = append(remove, running...)
		}
	}
	// Pods bound to a node that no longer exists are PodGC's, as in Kubernetes: it deletes
	// them once the node has been gone a while, so a node being registered again keeps them.
	// A pod not yet bound to its missing node can never be scheduled and PodGC leaves it
	// alone, so, as Kubernetes does, the controller deletes it.
	known := make(map[string]bool, len(nodes))
	for _, node := range nodes {
		known[node.Name] = true
	}
	for n, ps := range byNode {
		if known[n] || n == "" {
			continue
		}
		for _, p := range ps {
			if p.Spec.NodeName == "" {
				remove = append(remove, p)
			}
		}
	}

	var manageErr error
	if satisfied {
		manageErr = c.manage(ctx, key, ds, create, remove, hash)
		// As in Kubernetes, the rolling update takes its step only when the creations and
		// deletions above left nothing outstanding; otherwise it would judge availability by
		// pods this sync is still creating or deleting.
		if manageErr == nil && c.exp.Satisfied(key) {
			manageErr = c.rollingUpdate(ctx, key, ds, nodes, c.withDeletionsSeen(pods), hash)
		}
		// Old revisions are pruned last, as in Kubernetes, so a revision that cannot be deleted
		// holds up neither the pods nor the status. Pods this sync created run the current
		// revision and pods it deleted are still in pods, so neither changes what is pruned.
		if manageErr == nil {
			manageErr = c.pruneHistory(ctx, ds, hist, pods)
		}
	}
	if err := c.updateStatus(ctx, ds, nodes, pods, hash, satisfied); err != nil {
		return err
	}
	// A ready pod turns available by time alone, with no event: look again then, as
	// Kubernetes does, so numberAvailable and a surge rollout do not wait for the resync.
	if wait, ok := untilNextAvailable(ds, pods, c.now()); ok {
		c.queue.AddAfter(key, wait)
	}
	return manageErr
}

// withDeletionsSeen is pods as the informer now shows their deletion: when the expectations are
// met right after manage, the informer has shown the deletions it made, which pods predates, and
// the rolling update must see those pods going (Kubernetes reads the pods again for it), or it
// deletes them a second time. Only the deletion is taken from the cache: the labels syncHistory
// has just put right stay as pods has them.
func (c *Controller) withDeletionsSeen(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		cur, err := c.podLister.Pods(p.Namespace).Get(p.Name)
		switch {
		case apierrors.IsNotFound(err) || (err == nil && cur.UID != p.UID):
			continue // gone
		case err == nil && cur.DeletionTimestamp != nil && p.DeletionTimestamp == nil:
			p = p.DeepCopy()
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = cur.DeletionTimestamp, cur.DeletionGracePeriodSeconds
		}
		out = append(out, p)
	}
	return out
}

// untilNextAvailable is how long until the first of ds's ready pods that is not yet available
// becomes so under minReadySeconds; ok is false if no pod is waiting for that.
func untilNextAvailable(ds *appsv1.DaemonSet, pods []*corev1.Pod, now time.Time) (wait time.Duration, ok bool) {
	minReady := time.Duration(ds.Spec.MinReadySeconds) * time.Second
	if minReady <= 0 {
		return 0, false
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || !podstate.IsReady(p) || podstate.IsAvailable(p, ds.Spec.MinReadySeconds, now) {
			continue
		}
		since := podstate.ReadyCondition(p).LastTransitionTime
		if since.IsZero() {
			continue // never available
		}
		if w := since.Add(minReady).Sub(now); !ok || w < wait {
			wait, ok = w, true
		}
	}
	return wait, ok
}

func (c *Controller) claimPods(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector) ([]*corev1.Pod, error) {
	all, err := c.podLister.Pods(ds.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	// Finished pods are claimed too: failed and succeeded daemon pods are deleted and replaced.
	objs := make([]metav1.Object, len(all))
	for i, p := range all {
		objs[i] = p
	}
	cl := controllerref.Claimer{
		Owner: ds, OwnerGVK: controllerKind, Selector: selector,
		Patch: func(ctx context.Context, ns, name string, patch []byte) error {
			_, err := c.client.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		},
		CanAdopt: controllerref.RecheckOwner(ds, func(ctx context.Context) (metav1.Object, error) {
			return c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		}),
	}
	claimed, err := cl.Claim(ctx, objs)
	out := make([]*corev1.Pod, len(claimed))
	for i, o := range claimed {
		out[i] = o.(*corev1.Pod)
	}
	return out, err
}

// maxUnavailable resolves spec.updateStrategy.rollingUpdate.maxUnavailable against the number of
// nodes that should run the pod (percentages round up, as in Kubernetes). Used only by updates that
// do not surge, it is at least 1 while some node should run the pod, as Kubernetes makes it when
// neither surge nor unavailability would be allowed; with no such node, old pods left on nodes
// that no longer fit are retired only within an explicit count.
func maxUnavailable(ds *appsv1.DaemonSet, desired int) int {
	v := intstr.FromInt32(1)
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		v = *ru.MaxUnavailable
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, desired, true)
	switch {
	case err != nil:
		return 1
	case n < 1 && desired > 0:
		return 1
	}
	return max(n, 0)
}

// maxSurge resolves rollingUpdate.maxSurge against the number of nodes that should run the pod
// (percentages round up, as in Kubernetes); 0 means updates delete before they create.
func maxSurge(ds *appsv1.DaemonSet, desired int) int {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType || ru == nil || ru.MaxSurge == nil {
		return 0
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, desired, true)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// allowsSurge: rolling updates start new pods beside old ones (any non-zero maxSurge).
func allowsSurge(ds *appsv1.DaemonSet) bool { return maxSurge(ds, 1) > 0 }

// isUpdated says whether pod runs ds's current template, as Kubernetes' IsPodUpdated does: it
// carries the current revision's hash, or the template generation the API server keeps on the
// DaemonSet (so pods of a template whose revision was renamed, after a hash collision or by an
// older controller, are not rolled again).
func isUpdated(ds *appsv1.DaemonSet, pod *corev1.Pod, hash string) bool {
	if hash != "" && pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash {
		return true
	}
	gen, ok := ds.Annotations[appsv1.DeprecatedTemplateGeneration]
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(gen, 10, 64)
	return err == nil && pod.Labels[templateGenerationLabel] == strconv.FormatInt(n, 10)
}

// oldestFirst sorts a node's daemon pods as Kubernetes ranks them: bound ones first, then by
// creation time, then by name.
func oldestFirst(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if (a.Spec.NodeName != "") != (b.Spec.NodeName != "") {
			return a.Spec.NodeName != ""
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}

// rollingUpdate replaces old-revision pods under RollingUpdate, within maxSurge or maxUnavailable.
// As in Kubernetes, maxSurge is resolved against the nodes that should run the pod: a percentage of
// none (no node fits any more) is no surge, and old pods are retired within maxUnavailable.
func (c *Controller) rollingUpdate(ctx context.Context, key string, ds *appsv1.DaemonSet, nodes []*corev1.Node, pods []*corev1.Pod, hash string) error {
	if ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
		return nil
	}
	w := newUpdateWalk(ds, nodes, pods)
	if maxSurge(ds, w.desired) > 0 {
		create, remove := c.surgeNodes(ds, w, hash)
		return c.manage(ctx, key, ds, create, remove, hash)
	}
	return c.manage(ctx, key, ds, nil, c.rollingUpdateVictims(ds, w, hash), hash)
}

// updateWalk is what a rolling update walks, as Kubernetes' does: every node with a daemon pod (all
// but finished pods already being deleted, which need nothing more), wherever it is, and every node
// that should run one.
type updateWalk struct {
	onNode    map[string][]*corev1.Pod
	shouldRun map[string]bool // by node, for the nodes that exist
	desired   int             // nodes that should run the pod
}

func newUpdateWalk(ds *appsv1.DaemonSet, nodes []*corev1.Node, pods []*corev1.Pod) updateWalk {
	w := updateWalk{onNode: map[string][]*corev1.Pod{}, shouldRun: make(map[string]bool, len(nodes))}
	for _, p := range pods {
		if p.DeletionTimestamp != nil && podstate.IsTerminal(p) {
			continue
		}
		if n := targetNode(p); n != "" {
			w.onNode[n] = append(w.onNode[n], p)
		}
	}
	for _, node := range nodes {
		shouldRun, _ := placement(ds, node)
		w.shouldRun[node.Name] = shouldRun
		if !shouldRun {
			continue
		}
		w.desired++
		if _, ok := w.onNode[node.Name]; !ok {
			w.onNode[node.Name] = nil
		}
	}
	return w
}

// surgeNodes picks, as Kubernetes' rollingUpdate does with maxSurge, the nodes that get a
// current-revision pod beside their old one and the old pods to delete. Every node of the walk
// takes part (a failed pod kept by its back-off included, pods being deleted not):
//   - an old pod beside an available current one goes;
//   - a current pod not yet available beside an old one, and a node whose pods manage has yet
//     to sort out (more than one old or current), is a surge in flight and uses up the budget;
//   - an old pod not available is replaced at once, or deleted on a node that should no longer
//     get a pod;
//   - other old pods get a current one beside them while the budget lasts.
//
// Old pods on nodes that keep their pod but would no longer get one (a NoSchedule taint came
// later) are retired only while more nodes have an available pod than should run one. The pods of
// a node that is gone count but get no replacement; there Kubernetes' update stops with an error
// until PodGC has removed them, which would hold up every other node.
func (c *Controller) surgeNodes(ds *appsv1.DaemonSet, w updateWalk, hash string) ([]string, []*corev1.Pod) {
	now := c.now()
	isAvailable := func(p *corev1.Pod) bool { return podstate.IsAvailable(p, ds.Spec.MinReadySeconds, now) }
	budget := maxSurge(ds, w.desired)
	available := 0
	var create, candidates []string
	var remove, retirable []*corev1.Pod
	for name, ps := range w.onNode {
		current, old, ok := currentAndOld(ds, ps, hash)
		if !ok {
			budget--
			continue
		}
		// The node serves with its old pod while it has one.
		if serving := cmp.Or(old, current); serving != nil && isAvailable(serving) {
			available++
		}
		switch {
		case old == nil:
		case current != nil && !isAvailable(current):
			budget--
		case current != nil:
			remove = append(remove, old)
		case !nodeExists(w, name):
		case !isAvailable(old) && w.shouldRun[name]:
			create = append(create, name)
		case !isAvailable(old):
			remove = append(remove, old)
		case !w.shouldRun[name]:
			retirable = append(retirable, old)
		default:
			candidates = append(candidates, name)
		}
	}
	sort.Strings(create)
	sort.Strings(candidates)
	create = append(create, candidates[:min(max(0, budget), len(candidates))]...)
	oldestFirst(retirable)
	remove = append(remove, retirable[:max(0, min(len(retirable), available-w.desired))]...)
	return create, remove
}

// rollingUpdateVictims picks old-revision pods to delete now, as Kubernetes' rollingUpdate does
// without surge: every one that is not available (that costs no availability), then available ones
// while fewer than maxUnavailable nodes lack an available pod. A node whose pod is terminating, or
// whose pods manage has yet to sort out (more than one, or an old and a current one), counts as
// unavailable, wherever it is. Replacements are created on the next sync.
func (c *Controller) rollingUpdateVictims(ds *appsv1.DaemonSet, w updateWalk, hash string) []*corev1.Pod {
	now := c.now()
	unavailable := 0
	var victims, candidates []*corev1.Pod
	for _, ps := range w.onNode {
		current, old, ok := currentAndOld(ds, ps, hash)
		switch {
		case !ok || (current == nil) == (old == nil):
			// No pod, or pods manage is still sorting out.
			unavailable++
		case current != nil:
			if !podstate.IsAvailable(current, ds.Spec.MinReadySeconds, now) {
				unavailable++
			}
		case !podstate.IsAvailable(old, ds.Spec.MinReadySeconds, now):
			victims = append(victims, old)
			unavailable++
		default:
			candidates = append(candidates, old)
		}
	}
	sort.Slice(candidates, func(i, j int) bool { return targetNode(candidates[i]) < targetNode(candidates[j]) })
	n := min(max(0, maxUnavailable(ds, w.desired)-unavailable), len(candidates))
	return append(victims, candidates[:n]...)
}

func nodeExists(w updateWalk, name string) bool {
	_, ok := w.shouldRun[name]
	return ok
}

// currentAndOld returns a node's one current-revision and one old-revision pod, ignoring those
// being deleted; ok is false if it has more than one of either.
func currentAndOld(ds *appsv1.DaemonSet, pods []*corev1.Pod, hash string) (current, old *corev1.Pod, ok bool) {
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		slot := &old
		if isUpdated(ds, p, hash) {
			slot = &current
		}
		if *slot != nil {
			return nil, nil, false
		}
		*slot = p
	}
	return current, old, true
}

// burstReplicas caps the pods one sync creates, and those it deletes, as Kubernetes' controller does.
const burstReplicas = 250

// manage creates the pods for the given nodes and deletes the given pods. As in Kubernetes,
// creations go in batches of 1, 2, 4, … and stop after a batch with a failure (a quota or
// admission error would fail them all, each with its own event); the rest wait for a later sync.
func (c *Controller) manage(ctx context.Context, key string, ds *appsv1.DaemonSet, create []string, remove []*corev1.Pod, hash string) error {
	seen := map[types.UID]bool{}
	var del []*corev1.Pod
	for _, p := range remove {
		if !seen[p.UID] {
			seen[p.UID] = true
			del = append(del, p)
		}
	}
	create = create[:min(len(create), burstReplicas)]
	del = del[:min(len(del), burstReplicas)]
	keys := make([]string, len(del))
	for i, p := range del {
		keys[i] = p.Namespace + "/" + p.Name
	}
	c.exp.ExpectCreations(key, len(create))
	c.exp.ExpectDeletions(key, keys)
	var errs []error
	made, _, err := slowstart.Run(len(create), func(i int) error { return c.createOn(ctx, key, ds, create[i], hash) })
	if err != nil {
		errs = append(errs, err)
		for range create[made:] {
			c.exp.CreationObserved(key) // skipped: never to be observed
		}
	}
	var wg sync.WaitGroup
	delErrs := make([]error, len(del))
	for i, p := range del {
		wg.Go(func() {
			uid := p.UID
			err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			switch {
			case err == nil:
				c.recorder.Eventf(ds, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: %s", p.Name)
			case apierrors.IsNotFound(err):
				c.exp.DeletionObserved(key, keys[i])
			default:
				c.exp.DeletionObserved(key, keys[i])
				c.recorder.Eventf(ds, corev1.EventTypeWarning, ReasonFailedDelete, "Error deleting: %v", err)
				delErrs[i] = fmt.Errorf("delete daemon pod %s: %w", keys[i], err)
			}
		})
	}
	wg.Wait()
	return errors.Join(append(errs, delErrs...)...)
}

// createOn creates ds's pod for node; a failed creation is reported and no longer expected.
func (c *Controller) createOn(ctx context.Context, key string, ds *appsv1.DaemonSet, node, hash string) error {
	created, err := c.client.CoreV1().Pods(ds.Namespace).Create(ctx, podFor(ds, node, hash), metav1.CreateOptions{})
	if err != nil {
		c.exp.CreationObserved(key)
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		c.recorder.Eventf(ds, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating: %v", err)
		return fmt.Errorf("create daemon pod for node %s: %w", node, err)
	}
	c.recorder.Eventf(ds, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: %s", created.Name)
	return nil
}

// updateStatus records the counts; observed says this sync acted on the DaemonSet's spec. Like
// Kubernetes, a sync that only waited for earlier creations/deletions does not raise
// observedGeneration, so kubectl rollout status keeps waiting for the controller to act.
func (c *Controller) updateStatus(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, pods []*corev1.Pod, hash string, observed bool) error {
	now := c.now()
	st := ds.Status.DeepCopy()
	// As in Kubernetes, a node's pods are all it has but finished ones already being deleted:
	// a terminating pod still counts (a surge rollout is not done until the old pods are gone),
	// and the node is judged by its oldest pod.
	onNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil && podstate.IsTerminal(p) {
			continue
		}
		onNode[targetNode(p)] = append(onNode[targetNode(p)], p)
	}
	var desired, current, misscheduled, ready, available, updated int32
	for _, node := range nodes {
		shouldRun, _ := placement(ds, node)
		ps := onNode[node.Name]
		if !shouldRun {
			if len(ps) > 0 {
				misscheduled++
			}
			continue
		}
		desired++
		if len(ps) == 0 {
			continue
		}
		current++
		oldestFirst(ps)
		if podstate.IsReady(ps[0]) {
			ready++
			if podstate.IsAvailable(ps[0], ds.Spec.MinReadySeconds, now) {
				available++
			}
		}
		if isUpdated(ds, ps[0], hash) {
			updated++
		}
	}
	st.DesiredNumberScheduled, st.CurrentNumberScheduled, st.NumberMisscheduled = desired, current, misscheduled
	st.NumberReady, st.NumberAvailable, st.UpdatedNumberScheduled = ready, available, updated
	st.NumberUnavailable = desired - available
	if observed {
		st.ObservedGeneration = ds.Generation
	}
	if apiequality.Semantic.DeepEqual(&ds.Status, st) {
		return nil
	}
	return c.storeStatus(ctx, ds, st, observed)
}

// statusUpdateRetries is how many times a failed status write is tried again, each on a fresh
// read of the DaemonSet (Kubernetes' StatusUpdateRetries).
const statusUpdateRetries = 1

// storeStatus writes st as ds's status. A write that fails, most often with a conflict because the
// DaemonSet changed since the cache saw it, is tried again on a fresh read, as Kubernetes'
// storeDaemonSetStatus does, so the counts land in this sync rather than after a back-off; the
// retry carries only what this sync computed (the counts, and observedGeneration when it acted)
// onto what it read. A DaemonSet that is gone needs no status.
func (c *Controller) storeStatus(ctx context.Context, ds *appsv1.DaemonSet, st *appsv1.DaemonSetStatus, observed bool) error {
	client := c.client.AppsV1().DaemonSets(ds.Namespace)
	next := ds.DeepCopy()
	next.Status = *st
	for i := 0; ; i++ {
		_, err := client.UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if i >= statusUpdateRetries {
			return fmt.Errorf("update status of daemonset %s/%s: %w", ds.Namespace, ds.Name, err)
		}
		next, err = client.Get(ctx, ds.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read daemonset %s/%s to retry its status: %w", ds.Namespace, ds.Name, err)
		}
		setCounts(&next.Status, st)
		if observed {
			next.Status.ObservedGeneration = ds.Generation
		}
	}
}

// setCounts copies the pod counts a sync computes from src to dst.
func setCounts(dst, src *appsv1.DaemonSetStatus) {
	dst.DesiredNumberScheduled, dst.CurrentNumberScheduled = src.DesiredNumberScheduled, src.CurrentNumberScheduled
	dst.NumberMisscheduled, dst.NumberReady = src.NumberMisscheduled, src.NumberReady
	dst.NumberAvailable, dst.NumberUnavailable = src.NumberAvailable, src.NumberUnavailable
	dst.UpdatedNumberScheduled = src.UpdatedNumberScheduled
}

// failedBackoffKey names a back-off per DaemonSet, node and generation, so a
// changed template is tried at once.
func failedBackoffKey(ds *appsv1.DaemonSet, node string) string {
	return fmt.Sprintf("%s/%d/%s", ds.UID, ds.Status.ObservedGeneration, node)
}
