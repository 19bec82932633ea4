package statefulset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/skiffkube/skiff/controllers/controllerref"
	"github.com/skiffkube/skiff/controllers/podstate"
	"github.com/skiffkube/skiff/controllers/revision"
)

// Event reasons, as Kubernetes'.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedDelete     = "FailedDelete"
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulUpdate = "SuccessfulUpdate"
	ReasonFailedUpdate     = "FailedUpdate"
)

// Pod labels Kubernetes puts on StatefulSet pods.
const (
	podNameLabel  = appsv1.StatefulSetPodNameLabel // statefulset.kubernetes.io/pod-name
	podIndexLabel = appsv1.PodIndexLabel           // apps.kubernetes.io/pod-index
)

// revisions is what a sync knows about templates.
type revisions struct {
	current, update                 *appsv1.ControllerRevision
	currentTemplate, updateTemplate *corev1.PodTemplateSpec
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.setLister.StatefulSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.exp.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	set := cached.DeepCopy()
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil || selector.Empty() {
		c.recorder.Eventf(set, corev1.EventTypeWarning, "InvalidSelector", "invalid selector: %v", err)
		return nil
	}
	satisfied := c.exp.Satisfied(key)
	pods, err := c.claimPods(ctx, set, selector)
	if err != nil {
		return err
	}
	deleting := set.DeletionTimestamp != nil
	var revs revisions
	if deleting {
		// Nothing is made or removed for a set being deleted (the garbage collector
		// removes its pods), but, as in Kubernetes, its status goes on counting them.
		revs = revisions{
			current: &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: set.Status.CurrentRevision}},
			update:  &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: set.Status.UpdateRevision}},
		}
	} else {
		// Orphaned revisions the set selects are adopted (Kubernetes' adoptOrphanRevisions); unlike
		// a DaemonSet's, owned ones are never let go: a StatefulSet's selector cannot change.
		latest := func(ctx context.Context) (metav1.Object, error) {
			return c.client.AppsV1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		}
		if err := c.history.Claim(ctx, set, selector, latest, false); err != nil {
			return err
		}
		if revs, err = c.syncRevisions(ctx, set, pods); err != nil {
			return err
		}
	}
	byOrdinal := map[int]*corev1.Pod{}
	for _, p := range pods {
		// Of two pods at one ordinal (web-1 and web-01) the one of the canonical name is kept.
		if i, ok := ordinalOf(set, p); ok && (byOrdinal[i] == nil || p.Name == podName(set, i)) {
			byOrdinal[i] = p
		}
	}
	var manageErr error
	rolled := map[string]bool{} // pods deleted by this pass's rolling update
	if satisfied && !deleting {
		manageErr = c.manage(ctx, key, set, revs, byOrdinal, rolled)
	}
	available, err := c.updateStatus(ctx, set, revs, byOrdinal, rolled)
	if err != nil {
		return err
	}
	// As in Kubernetes, look again while pods are still to become available: the requeue on a
	// pod turning ready may come too early (clock skew, or minReadySeconds raised after the pods
	// became ready) and nothing else would follow. Kubernetes waits a whole minReadySeconds;
	// waiting only until the next ready pod's window ends reports it available on time. A pod
	// inside its window is looked at again even when availableReplicas is already spec.replicas:
	// a condemned one holds an OrderedReady scale-down back until it is available.
	if set.Spec.MinReadySeconds > 0 {
		wait, ripening := untilNextAvailable(set.Spec.MinReadySeconds, byOrdinal, c.now())
		if ripening || available != int32(replicasOf(set)) {
			c.queue.AddAfter(key, wait)
		}
	}
	return manageErr
}

// untilNextAvailable is how long until the first ready pod still inside its minReadySeconds
// window becomes available, and whether there is one; minReadySeconds at most (none is
// waiting, or a kubelet's clock runs ahead: the next sync looks again).
func untilNextAvailable(minReadySeconds int32, byOrdinal map[int]*corev1.Pod, now time.Time) (time.Duration, bool) {
	window := time.Duration(minReadySeconds) * time.Second
	wait, found := window, false
	for _, p := range byOrdinal {
		c := podstate.ReadyCondition(p)
		if p.Status.Phase != corev1.PodRunning || c == nil || c.Status != corev1.ConditionTrue || c.LastTransitionTime.IsZero() {
			continue
		}
		if d := c.LastTransitionTime.Add(window).Sub(now); d > 0 && d <= wait {
			wait, found = d, true
		}
	}
	return wait, found
}

// ordinalOf parses <set>-<ordinal> from a pod's name. As in Kubernetes (getOrdinal) the
// ordinal is the decimal number of the digits, leading zeros and all: web-01 is the set's
// pod at ordinal 1, holding that place (and going when it is scaled down or rolled). A
// number beyond 32 bits is no ordinal.
func ordinalOf(set *appsv1.StatefulSet, pod *corev1.Pod) (int, bool) {
	if !isMember(set, pod) {
		return 0, false
	}
	i, err := strconv.ParseInt(pod.Name[len(set.Name)+1:], 10, 32)
	if err != nil {
		return 0, false
	}
	return int(i), true
}

// isMember is whether the pod's name is <set>-<digits>, the names of the set's pods.
func isMember(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	s, ok := strings.CutPrefix(pod.Name, set.Name+"-")
	if !ok || s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func (c *Controller) claimPods(ctx context.Context, set *appsv1.StatefulSet, selector labels.Selector) ([]*corev1.Pod, error) {
	all, err := c.podLister.Pods(set.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	// As in Kubernetes only pods named <set>-<digits> are the set's to adopt; one it
	// controls under another name is released (it would otherwise go with the set).
	var objs, strangers []metav1.Object
	for _, p := range all {
		if isMember(set, p) {
			objs = append(objs, p)
		} else if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.UID == set.UID {
			strangers = append(strangers, p)
		}
	}
	cl := controllerref.Claimer{
		Owner: set, OwnerGVK: controllerKind, Selector: selector,
		Patch: func(ctx context.Context, ns, name string, patch []byte) error {
			_, err := c.client.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		},
		CanAdopt: controllerref.RecheckOwner(set, func(ctx context.Context) (metav1.Object, error) {
			return c.client.AppsV1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		}),
	}
	claimed, err := cl.Claim(ctx, objs)
	if len(strangers) > 0 {
		release := cl
		release.Selector = labels.Nothing()
		_, rerr := release.Claim(ctx, strangers)
		err = errors.Join(err, rerr)
	}
	out := make([]*corev1.Pod, len(claimed))
	for i, o := range claimed {
		out[i] = o.(*corev1.Pod)
	}
	return out, err
}

// syncRevisions records the template as the update revision and finds the current one.
func (c *Controller) syncRevisions(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod) (revisions, error) {
	update, owned, err := c.history.Sync(ctx, set, &set.Spec.Template, set.Status.CollisionCount)
	if errors.Is(err, revision.ErrCollision) {
		next := set.DeepCopy()
		cc := int32(1)
		if set.Status.CollisionCount != nil {
			cc = *set.Status.CollisionCount + 1
		}
		next.Status.CollisionCount = &cc
		if _, uerr := c.client.AppsV1().StatefulSets(set.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); uerr != nil {
			return revisions{}, uerr
		}
		return revisions{}, fmt.Errorf("%w; collision count now %d", err, cc)
	}
	if err != nil {
		return revisions{}, err
	}
	r := revisions{update: update, current: update, updateTemplate: &set.Spec.Template, currentTemplate: &set.Spec.Template}
	for _, rev := range owned {
		if rev.Name == set.Status.CurrentRevision && rev.Name != update.Name {
			t, err := revision.Template(rev)
			if err != nil {
				return revisions{}, err
			}
			r.current, r.currentTemplate = rev, t
		}
	}
	inUse := map[string]bool{r.current.Name: true, r.update.Name: true}
	for _, p := range pods {
		inUse[p.Labels[appsv1.ControllerRevisionHashLabelKey]] = true
	}
	limit := int32(revision.DefaultHistoryLimit)
	if set.Spec.RevisionHistoryLimit != nil {
		limit = *set.Spec.RevisionHistoryLimit
	}
	return r, c.history.Prune(ctx, owned, inUse, limit)
}

func replicasOf(set *appsv1.StatefulSet) int {
	if set.Spec.Replicas == nil {
		return 1
	}
	return int(*set.Spec.Replicas)
}

// startOrdinal is spec.ordinals.start: the set's pods are numbered start … start+replicas-1.
func startOrdinal(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals == nil {
		return 0
	}
	return int(set.Spec.Ordinals.Start)
}

// partitionOf is the rolling update partition, counted (as in Kubernetes) from the start ordinal.
func partitionOf(set *appsv1.StatefulSet) int {
	ru := set.Spec.UpdateStrategy.RollingUpdate
	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType || ru == nil || ru.Partition == nil {
		return 0
	}
	return int(*ru.Partition)
}

func (c *Controller) healthy(set *appsv1.StatefulSet, p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning &&
		podstate.IsAvailable(p, set.Spec.MinReadySeconds, c.now())
}

// liveAndReady is Kubernetes' isHealthy: running, ready and not being deleted, whatever
// minReadySeconds says.
func liveAndReady(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podstate.IsReady(p)
}

func revisionOf(p *corev1.Pod) string { return p.Labels[appsv1.ControllerRevisionHashLabelKey] }

// manage takes the next steps towards the declared state: create missing and replace finished pods,
// remove pods outside the ordinal range, then roll pods at or above the partition to the update
// revision. Under OrderedReady it takes one step and waits for the set to be healthy before the next.
// The pod deleted to roll it to the update revision is noted in rolled.
func (c *Controller) manage(ctx context.Context, key string, set *appsv1.StatefulSet, revs revisions, byOrdinal map[int]*corev1.Pod,
	rolled map[string]bool) (err error) {
	ordered := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	start, partition := startOrdinal(set), partitionOf(set)
	end := start + replicasOf(set) // exclusive

	// Under Parallel a pod waiting for a stale claim holds up no other step, as in
	// Kubernetes; the wait is still reported, so the set is looked at again.
	var waiting error
	defer func() { err = errors.Join(err, waiting) }()
	var errs []error
	// 1. Ordinals in [start, end): create what is missing, replace finished pods. Succeeded counts
	// as finished too: a pod stopped from outside (node shutdown, eviction) may exit 0, and
	// Kubernetes recreates it regardless of the exit code.
	for i := start; i < end; i++ {
		p := byOrdinal[i]
		if p != nil && p.Status.Phase == corev1.PodPending && p.DeletionTimestamp == nil && len(set.Spec.VolumeClaimTemplates) > 0 {
			// A claim deleted while its pod waits (for a node, for the volume) is
			// made again, as in Kubernetes; the pod could never start without it.
			if err := c.ensureClaims(ctx, set, i, p.Name, false); err != nil {
				return err
			}
		}
		switch {
		case p == nil:
			rev, tmpl := revs.update, revs.updateTemplate
			if set.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType && i < start+partition {
				rev, tmpl = revs.current, revs.currentTemplate
			}
			err := c.createPod(ctx, key, set, i, rev, tmpl)
			if !ordered && errors.Is(err, errStaleClaim) {
				waiting = errors.Join(waiting, err)
				continue
			}
			if err != nil || ordered {
				return err
			}
		case podstate.IsTerminal(p) && p.DeletionTimestamp == nil:
			if err := c.deletePod(ctx, key, set, p); err != nil || ordered {
				return err
			}
		case ordered && !c.healthy(set, p):
			return nil // wait for this pod before touching the next
		}
		// The set's invariants on a pod it keeps, as Kubernetes enforces
		// them once the pod may be touched: its identity labels, and its
		// claims' owners under the retention policy.
		if p != nil && p.DeletionTimestamp == nil && !podstate.IsTerminal(p) {
			if err := c.restoreIdentity(ctx, set, p, i); err != nil {
				return err
			}
			if err := c.matchClaimRetention(ctx, set, p, false); err != nil {
				return err
			}
		}
	}
	// 2. Ordinals outside the range go, highest first.
	var condemned []*corev1.Pod
	for i, p := range byOrdinal {
		if i < start || i >= end {
			condemned = append(condemned, p)
		}
	}
	sort.Slice(condemned, func(a, b int) bool { return condOrd(set, condemned[a]) > condOrd(set, condemned[b]) })
	// Condemned pods' claims first get the owners of scaled-down claims
	// (whenScaled: Delete hands them to the pod, so they go with it).
	for _, p := range condemned {
		if err := c.matchClaimRetention(ctx, set, p, true); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// Under OrderedReady, as in Kubernetes, a condemned pod that is not healthy goes only
	// if it is the lowest such one; an unhealthy pod above it waits (the pods in the
	// range are all healthy by now, step 1 having waited for them). The lowest one is
	// judged by readiness alone, as Kubernetes v1.33's isHealthy: a pod ready but not yet
	// available is not it, and waits for minReadySeconds like any other.
	var firstUnhealthy *corev1.Pod
	for i := len(condemned) - 1; i >= 0 && ordered; i-- {
		if !liveAndReady(condemned[i]) {
			firstUnhealthy = condemned[i]
			break
		}
	}
	for _, p := range condemned {
		if p.DeletionTimestamp != nil {
			if ordered {
				return nil // one at a time: wait for it to be gone
			}
			continue
		}
		if ordered && p != firstUnhealthy && !c.healthy(set, p) {
			return nil // wait for it to be healthy (or the lowest unhealthy one)
		}
		if err := c.deletePod(ctx, key, set, p); err != nil {
			errs = append(errs, err)
		}
		if ordered {
			return errors.Join(errs...)
		}
	}
	// (Under OrderedReady the loop above has returned; under Parallel, as in Kubernetes,
	// the rolling update goes on in the same pass as the scale-down.)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// 3. Rolling update, highest ordinal first, one pod at a time: an old pod is deleted (and
	// recreated at the update revision by step 1) once every pod above it is updated and healthy.
	// As in Kubernetes, pods below the one being replaced need not be healthy — under OrderedReady
	// step 1 has already waited for them; under Parallel this lets a fix for crash-looping pods roll out.
	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return nil
	}
	for i := end - 1; i >= start+partition; i-- {
		p := byOrdinal[i]
		switch {
		case p == nil || podstate.IsTerminal(p):
			return nil // being created or replaced by step 1
		case revisionOf(p) != revs.update.Name && p.DeletionTimestamp == nil:
			if err := c.deletePod(ctx, key, set, p); err != nil {
				return err
			}
			rolled[p.Name] = true
			return nil
		case !c.healthy(set, p):
			return nil // wait for it before the next
		}
	}
	return nil
}

// restoreIdentity puts back the identity labels of the set's pod at
// ordinal (statefulset.kubernetes.io/pod-name, apps.kubernetes.io/pod-index)
// when someone removed or changed the pod-name one, as Kubernetes'
// updateIdentity: Services and peers select a member by it. As Kubernetes'
// identityMatches, the pod-index label alone is not checked.
func (c *Controller) restoreIdentity(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod, ordinal int) error {
	index := strconv.Itoa(ordinal)
	if pod.Labels[podNameLabel] == pod.Name {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{podNameLabel: pod.Name, podIndexLabel: index}}})
	if err != nil {
		return err
	}
	if _, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		c.recorder.Eventf(set, corev1.EventTypeWarning, ReasonFailedUpdate, "update Pod %s in StatefulSet %s failed error: %v", pod.Name, set.Name, err)
		return fmt.Errorf("update pod %s/%s identity: %w", pod.Namespace, pod.Name, err)
	}
	c.recorder.Eventf(set, corev1.EventTypeNormal, ReasonSuccessfulUpdate, "update Pod %s in StatefulSet %s successful", pod.Name, set.Name)
	return nil
}

func condOrd(set *appsv1.StatefulSet, p *corev1.Pod) int {
	i, _ := ordinalOf(set, p)
	return i
}

// podName is the name of the set's pod at ordinal: <set>-<ordinal>.
func podName(set *appsv1.StatefulSet, ordinal int) string {
	return fmt.Sprintf("%s-%d", set.Name, ordinal)
}

// podFor builds pod <set>-<ordinal> from a revision's template.
func podFor(set *appsv1.StatefulSet, ordinal int, rev *appsv1.ControllerRevision, tmpl *corev1.PodTemplateSpec) *corev1.Pod {
	t := tmpl.DeepCopy()
	name := podName(set, ordinal)
	lbls := map[string]string{}
	for k, v := range t.Labels {
		lbls[k] = v
	}
	lbls[appsv1.ControllerRevisionHashLabelKey] = rev.Name
	lbls[podNameLabel] = name
	lbls[podIndexLabel] = strconv.Itoa(ordinal)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			// generateName as Kubernetes' GetPodFromTemplate sets it; the name given wins.
			Name: name, GenerateName: set.Name + "-", Namespace: set.Namespace, Labels: lbls, Annotations: t.Annotations, Finalizers: t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{controllerref.New(set, controllerKind)},
		},
		Spec: t.Spec,
	}
	pod.Spec.Hostname = name
	withClaimVolumes(set, pod, ordinal)
	if set.Spec.ServiceName != "" {
		pod.Spec.Subdomain = set.Spec.ServiceName
	}
	return pod
}

func (c *Controller) createPod(ctx context.Context, key string, set *appsv1.StatefulSet, ordinal int, rev *appsv1.ControllerRevision, tmpl *corev1.PodTemplateSpec) error {
	pod := podFor(set, ordinal, rev, tmpl)
	if err := c.ensureClaims(ctx, set, ordinal, pod.Name, true); err != nil {
		// As in Kubernetes, a pod held up by its claims is reported as not created,
		// except while the claim is still an earlier pod's.
		if !errors.Is(err, errStaleClaim) {
			c.recorder.Eventf(set, corev1.EventTypeWarning, ReasonFailedCreate, "create Pod %s in StatefulSet %s failed error: %v", pod.Name, set.Name, err)
		}
		return err
	}
	c.exp.ExpectCreations(key, 1)
	_, err := c.client.CoreV1().Pods(set.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		c.exp.CreationObserved(key)
		// A pod of that name already there (not yet in the cache, or someone
		// else's) is retried silently, as Kubernetes' CreateStatefulPod does. Any
		// other failure is told, a namespace being deleted too: v1.33's StatefulSet
		// controller, unlike the ReplicaSet one, does not single it out.
		if !apierrors.IsAlreadyExists(err) {
			c.recorder.Eventf(set, corev1.EventTypeWarning, ReasonFailedCreate, "create Pod %s in StatefulSet %s failed error: %v", pod.Name, set.Name, err)
		}
		return fmt.Errorf("create pod %s/%s: %w", set.Namespace, pod.Name, err)
	}
	c.recorder.Eventf(set, corev1.EventTypeNormal, ReasonSuccessfulCreate, "create Pod %s in StatefulSet %s successful", pod.Name, set.Name)
	return nil
}

func (c *Controller) deletePod(ctx context.Context, key string, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	podKey := pod.Namespace + "/" + pod.Name
	c.exp.ExpectDeletions(key, []string{podKey})
	uid := pod.UID
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil {
		c.exp.DeletionObserved(key, podKey)
		// A pod already gone is told and returned too, as v1.33's DeleteStatefulPod.
		c.recorder.Eventf(set, corev1.EventTypeWarning, ReasonFailedDelete, "delete Pod %s in StatefulSet %s failed error: %v", pod.Name, set.Name, err)
		return fmt.Errorf("delete pod %s: %w", podKey, err)
	}
	c.recorder.Eventf(set, corev1.EventTypeNormal, ReasonSuccessfulDelete, "delete Pod %s in StatefulSet %s successful", pod.Name, set.Name)
	return nil
}

// updateStatus writes the set's status and returns its availableReplicas. Pods in rolled,
// deleted by this pass though the cache still shows them running, are no longer counted as
// current or updated: as in Kubernetes, the status written in the pass that deletes a pod
// for the rolling update already has one current replica less.
func (c *Controller) updateStatus(ctx context.Context, set *appsv1.StatefulSet, revs revisions, byOrdinal map[int]*corev1.Pod,
	rolled map[string]bool) (int32, error) {
	now := c.now()
	st := set.Status.DeepCopy()
	var replicas, ready, available, current, updated int32
	for _, p := range byOrdinal {
		replicas++
		if p.Status.Phase == corev1.PodRunning && podstate.IsReady(p) {
			ready++
			if podstate.IsAvailable(p, set.Spec.MinReadySeconds, now) {
				available++
			}
		}
		if p.DeletionTimestamp != nil || rolled[p.Name] {
			continue
		}
		if revisionOf(p) == revs.current.Name {
			current++
		}
		if revisionOf(p) == revs.update.Name {
			updated++
		}
	}
	st.Replicas, st.ReadyReplicas, st.AvailableReplicas = replicas, ready, available
	st.CurrentReplicas, st.UpdatedReplicas = current, updated
	st.CurrentRevision, st.UpdateRevision = revs.current.Name, revs.update.Name
	st.ObservedGeneration = set.Generation
	if st.CollisionCount == nil {
		st.CollisionCount = new(int32) // reported as 0, as Kubernetes does, until a collision
	}
	// A finished rolling update makes the update revision current: spec.replicas pods, and no
	// more, there, updated and ready (Kubernetes' completeRollingUpdate). Judged against the
	// pods there are, a pod below the partition that is gone for a moment would let the update
	// revision become current, and the pod would come back at it; a scale-down still under way
	// holds the update back, as in Kubernetes.
	if want := int32(replicasOf(set)); set.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType &&
		replicas == want && updated == want && ready == want {
		st.CurrentRevision, st.CurrentReplicas = st.UpdateRevision, updated
	}
	if apiequality.Semantic.DeepEqual(&set.Status, st) {
		return available, nil
	}
	next := set.DeepCopy()
	next.Status = *st
	_, err := c.client.AppsV1().StatefulSets(set.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return available, nil
	}
	if err != nil {
		return available, fmt.Errorf("update status of statefulset %s/%s: %w", set.Namespace, set.Name, err)
	}
	return available, nil
}
