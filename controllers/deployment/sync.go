package deployment

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/skiffkube/skiff/controllers/controllerref"
)

// sync makes one Deployment right. A namespace being deleted refuses every create (Forbidden with
// the NamespaceTerminating cause); that is expected, so it ends the sync quietly, with neither an
// event nor a retry, as in Kubernetes. The namespace controller deletes the Deployment soon.
func (c *Controller) sync(ctx context.Context, key string) error {
	err := c.syncDeployment(ctx, key)
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return nil
	}
	return err
}

func (c *Controller) syncDeployment(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.dLister.Deployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	d := cached.DeepCopy()
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || selector.Empty() {
		c.recorder.Eventf(d, corev1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			_, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
			return err
		}
		return nil
	}
	rsList, err := c.claimReplicaSets(ctx, d, selector)
	if err != nil {
		return err
	}
	if d.DeletionTimestamp != nil {
		return c.syncStatusOnly(ctx, d, rsList)
	}
	if err := c.checkPausedConditions(ctx, d); err != nil {
		return err
	}
	if d.Spec.Paused {
		return c.syncScale(ctx, d, rsList)
	}
	// A rollback request is settled (and removed) before anything else moves: the ReplicaSets'
	// revisions change as the rolled-back template goes out.
	if to, ok := rollbackTo(d); ok {
		return c.rollback(ctx, d, rsList, to)
	}
	if scaling, err := c.isScalingEvent(ctx, d, rsList); err != nil {
		return err
	} else if scaling {
		return c.syncScale(ctx, d, rsList)
	}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return c.rolloutRecreate(ctx, d, rsList)
	}
	return c.rolloutRolling(ctx, d, rsList)
}

func (c *Controller) claimReplicaSets(ctx context.Context, d *appsv1.Deployment, selector labels.Selector) ([]*appsv1.ReplicaSet, error) {
	all, err := c.rsLister.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	objs := make([]metav1.Object, len(all))
	for i, rs := range all {
		objs[i] = rs
	}
	cl := controllerref.Claimer{
		Owner: d, OwnerGVK: controllerKind, Selector: selector,
		Patch: func(ctx context.Context, ns, name string, patch []byte) error {
			_, err := c.client.AppsV1().ReplicaSets(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		},
		CanAdopt: controllerref.RecheckOwner(d, func(ctx context.Context) (metav1.Object, error) {
			return c.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		}),
	}
	claimed, err := cl.Claim(ctx, objs)
	out := make([]*appsv1.ReplicaSet, len(claimed))
	for i, o := range claimed {
		out[i] = o.(*appsv1.ReplicaSet)
	}
	return out, err
}

// replicaSets splits the owned ReplicaSets into the new one (creating it if asked and missing) and the
// old ones, oldest first as in Kubernetes (whose FindNewReplicaSet sorts the list it is given), so
// Recreate scales them down, and records events, in that order rather than the lister's; and
// brings revision annotations up to date.
func (c *Controller) replicaSets(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	existing := findNewReplicaSet(d, rsList)
	old := findOldReplicaSets(sortedByCreation(rsList), existing)
	newRS, err := c.newReplicaSet(ctx, d, existing, old, create)
	return newRS, old, err
}

func (c *Controller) newReplicaSet(ctx context.Context, d *appsv1.Deployment, existing *appsv1.ReplicaSet, old []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, error) {
	newRevision := maxRevision(old) + 1
	if existing != nil {
		rs := existing.DeepCopy()
		changed := copyDeploymentAnnotations(d, rs)
		if revision(rs.Annotations) < newRevision {
			changed = setRevision(rs, newRevision) || changed
		}
		// Size annotations are not touched here: proportional scaling needs the size the ReplicaSet was
		// last scaled for; scaleReplicaSet updates them.
		if rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			changed = true
		}
		if changed {
			updated, err := c.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
			if err != nil {
				return nil, fmt.Errorf("update replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
			}
			rs = updated
		}
		if err := c.setDeploymentRevision(ctx, d, rs.Annotations[RevisionAnnotation]); err != nil {
			return nil, err
		}
		if hasProgressDeadline(d) && getCondition(&d.Status, appsv1.DeploymentProgressing) == nil {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, FoundNewRSReason,
				fmt.Sprintf("Found new replica set %q", rs.Name), c.now()))
			updated, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
			if err != nil {
				return nil, err
			}
			*d = *updated
		}
		return rs, nil
	}
	if !create {
		return nil, nil
	}

	hash := ComputeHash(&d.Spec.Template, d.Status.CollisionCount)
	tmpl := *d.Spec.Template.DeepCopy()
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels[PodTemplateHashLabel] = hash
	sel := d.Spec.Selector.DeepCopy()
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[PodTemplateHashLabel] = hash
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			Labels:          tmpl.Labels,
			OwnerReferences: []metav1.OwnerReference{controllerref.New(d, controllerKind)},
		},
		Spec: appsv1.ReplicaSetSpec{Selector: sel, Template: tmpl, MinReadySeconds: d.Spec.MinReadySeconds},
	}
	allRSs := append(append([]*appsv1.ReplicaSet{}, old...), rs)
	zero := int32(0)
	rs.Spec.Replicas = &zero
	n := newRSReplicas(d, allRSs, rs)
	rs.Spec.Replicas = &n
	copyDeploymentAnnotations(d, rs)
	setRevision(rs, newRevision)
	setReplicasAnnotations(rs, replicas(d), replicas(d)+maxSurge(d))

	created, err := c.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// Either our informer is behind (same template: use it) or two templates share a hash: bump
		// collisionCount so the next sync picks another name.
		other, gerr := c.rsLister.ReplicaSets(d.Namespace).Get(rs.Name)
		if gerr == nil && metav1.IsControlledBy(other, d) && equalIgnoreHash(&other.Spec.Template, &d.Spec.Template) {
			return other, nil
		}
		if gerr != nil && !apierrors.IsNotFound(gerr) {
			return nil, gerr
		}
		if gerr != nil {
			return nil, err // not in our cache yet: retry later
		}
		cc := int32(0)
		if d.Status.CollisionCount != nil {
			cc = *d.Status.CollisionCount
		}
		cc++
		d.Status.CollisionCount = &cc
		if _, uerr := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); uerr != nil {
			return nil, uerr
		}
		return nil, fmt.Errorf("replicaset %s exists with another template; collisionCount is now %d", rs.Name, cc)
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// Every create will fail until the namespace is gone: nothing to report (sync drops it).
		return nil, err
	case err != nil:
		if hasProgressDeadline(d) {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, FailedRSCreateReason,
				fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err), c.now()))
			_, _ = c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		}
		c.recorder.Eventf(d, corev1.EventTypeWarning, FailedRSCreateReason, "Failed to create new replica set %q: %v", rs.Name, err)
		return nil, err
	}
	if n > 0 {
		c.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set %s from 0 to %d", created.Name, n)
	}
	if err := c.setDeploymentRevision(ctx, d, created.Annotations[RevisionAnnotation]); err != nil {
		return nil, err
	}
	if hasProgressDeadline(d) {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, NewRSReason,
			fmt.Sprintf("Created new replica set %q", created.Name), c.now()))
		updated, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		if err != nil {
			return nil, err
		}
		*d = *updated
	}
	return created, nil
}

// setDeploymentRevision mirrors the new ReplicaSet's revision on the Deployment (kubectl rollout
// history/status read it) whenever the two differ, lower as well as higher: a Deployment applied
// with another cluster's revision takes this cluster's. It is written through /status, as
// kube-controller-manager does: a Deployment's annotations move its generation on the main
// resource, its status writes may set them without. The write is guarded by the resourceVersion
// this sync read, so a Deployment changed meanwhile (a new spec the sync has not acted on) makes
// it fail with a conflict and the key is requeued; the metadata it returns can then never be
// mistaken for what this sync computed against.
func (c *Controller) setDeploymentRevision(ctx context.Context, d *appsv1.Deployment, rev string) error {
	if rev == "" || d.Annotations[RevisionAnnotation] == rev {
		return nil
	}
	cp := d.DeepCopy()
	if cp.Annotations == nil {
		cp.Annotations = map[string]string{}
	}
	cp.Annotations[RevisionAnnotation] = rev
	updated, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("set revision of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	d.ObjectMeta = updated.ObjectMeta
	return nil
}

// resizeReplicaSet is scaleReplicaSet for the rollout steps: a ReplicaSet already at the size is
// left alone, stale size annotations and all, as Kubernetes' scaleReplicaSetAndRecordEvent does.
// Only a resize or the proportional spread of a scaling event (scale) rewrites them.
func (c *Controller) resizeReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, size int32, d *appsv1.Deployment) (bool, *appsv1.ReplicaSet, error) {
	if rsReplicas(rs) == size {
		return false, rs, nil
	}
	return c.scaleReplicaSet(ctx, rs, size, d)
}

// scaleReplicaSet sets a ReplicaSet's size and the size annotations, writing it when either
// differs, and records an event when the size changed.
func (c *Controller) scaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, size int32, d *appsv1.Deployment) (bool, *appsv1.ReplicaSet, error) {
	sizeChanged := rsReplicas(rs) != size
	cp := rs.DeepCopy()
	annChanged := setReplicasAnnotations(cp, replicas(d), replicas(d)+maxSurge(d))
	if !sizeChanged && !annChanged {
		return false, rs, nil
	}
	from := rsReplicas(rs)
	cp.Spec.Replicas = &size
	updated, err := c.client.AppsV1().ReplicaSets(cp.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return false, nil, fmt.Errorf("scale replicaset %s/%s to %d: %w", rs.Namespace, rs.Name, size, err)
	}
	if sizeChanged {
		verb := "up"
		if size < from {
			verb = "down"
		}
		c.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled %s replica set %s from %d to %d", verb, rs.Name, from, size)
	}
	return sizeChanged, updated, nil
}

// isScalingEvent: an active ReplicaSet was sized for another replica count than the Deployment's.
func (c *Controller) isScalingEvent(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	newRS, old, err := c.replicaSets(ctx, d, rsList, false)
	if err != nil {
		return false, err
	}
	for _, rs := range filterActive(append(old, newRS)) {
		if desired, ok := sizeAnnotation(rs.Annotations, DesiredReplicasAnnotation); ok && desired != replicas(d) {
			return true, nil
		}
	}
	return false, nil
}

// syncScale handles paused Deployments and resizes: no new ReplicaSet, proportional scaling.
func (c *Controller) syncScale(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := c.replicaSets(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := c.scale(ctx, d, newRS, old); err != nil {
		return err
	}
	// A paused Deployment prunes its history, unless a rollback waits for it to resume: the revision
	// it names must still be there.
	if _, pendingRollback := rollbackTo(d); d.Spec.Paused && !pendingRollback {
		if err := c.cleanup(ctx, d, old); err != nil {
			return err
		}
	}
	return c.syncDeploymentStatus(ctx, d, append(old, newRS), newRS)
}

func (c *Controller) syncStatusOnly(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := c.replicaSets(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	return c.syncDeploymentStatus(ctx, d, append(old, newRS), newRS)
}

// scale spreads a resize over the active ReplicaSets.
func (c *Controller) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) error {
	if only := activeOrLatest(newRS, old); only != nil {
		if rsReplicas(only) == replicas(d) {
			return nil
		}
		_, _, err := c.resizeReplicaSet(ctx, only, replicas(d), d)
		return err
	}
	if newRS != nil && rsReplicas(newRS) == replicas(d) && newRS.Status.AvailableReplicas == replicas(d) {
		if desired, ok := desiredForSaturation(newRS.Annotations); ok && desired == replicas(d) {
			// Saturated: old ReplicaSets simply go away, newest first, the order Kubernetes' scale
			// leaves them in (its FindActiveOrLatest sorts them so, in place).
			active := sortedByCreation(filterActive(old))
			for i := len(active) - 1; i >= 0; i-- {
				if _, _, err := c.resizeReplicaSet(ctx, active[i], 0, d); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if !isRollingUpdate(d) {
		return nil
	}
	all := filterActive(append(append([]*appsv1.ReplicaSet{}, old...), newRS))
	allowed := int32(0)
	if replicas(d) > 0 {
		allowed = replicas(d) + maxSurge(d)
	}
	toAdd := allowed - sumSpec(all)
	// Growth goes to the largest (then newest) first; shrinking takes from the largest (then oldest).
	sortBySize(all, toAdd > 0)
	sizes := make([]int32, len(all))
	added := int32(0)
	for i, rs := range all {
		p := int32(0)
		if toAdd != 0 {
			p = proportion(rs, d, toAdd, added)
		}
		sizes[i] = rsReplicas(rs) + p
		added += p
	}
	if len(all) > 0 && toAdd != 0 {
		sizes[0] = max(sizes[0]+toAdd-added, 0)
	}
	// Here a ReplicaSet that keeps its size is still written when its size annotations differ
	// (Kubernetes' scale calls scaleReplicaSet, not scaleReplicaSetAndRecordEvent): left stale, its
	// desired-replicas would make the next sync a scaling event again.
	for i, rs := range all {
		if _, _, err := c.scaleReplicaSet(ctx, rs, sizes[i], d); err != nil {
			return err
		}
	}
	return nil
}

func activeOrLatest(newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if newRS == nil && len(old) == 0 {
		return nil
	}
	active := filterActive(append(append([]*appsv1.ReplicaSet{}, old...), newRS))
	switch len(active) {
	case 0:
		if newRS != nil {
			return newRS
		}
		sorted := sortedByCreation(old)
		return sorted[len(sorted)-1]
	case 1:
		return active[0]
	}
	return nil
}

// cleanup deletes scaled-down old ReplicaSets beyond revisionHistoryLimit, lowest revision first.
func (c *Controller) cleanup(ctx context.Context, d *appsv1.Deployment, old []*appsv1.ReplicaSet) error {
	if d.Spec.RevisionHistoryLimit == nil {
		return nil
	}
	var alive []*appsv1.ReplicaSet
	for _, rs := range old {
		if rs != nil && rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	diff := len(alive) - int(*d.Spec.RevisionHistoryLimit)
	if diff <= 0 {
		return nil
	}
	sortByRevision(alive)
	for _, rs := range alive[:diff] {
		if rs.Status.Replicas != 0 || rsReplicas(rs) != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue // still has pods, or its controller has not caught up
		}
		err := c.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &rs.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete old replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
		}
	}
	return nil
}

func (c *Controller) syncDeploymentStatus(ctx context.Context, d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) error {
	st := c.calculateStatus(allRSs, newRS, d)
	if apiequality.Semantic.DeepEqual(d.Status, st) {
		return nil
	}
	cp := d.DeepCopy()
	cp.Status = st
	_, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	return err
}
