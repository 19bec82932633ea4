package daemonset

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffkube/skiff/controllers/controllerref"
	"github.com/skiffkube/skiff/controllers/revision"
)

// syncHistory makes sure the current template has the newest ControllerRevision, prunes old unused
// revisions beyond the history limit, and returns the current hash (the pods' controller-revision-hash).
func (c *Controller) syncHistory(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector, pods []*corev1.Pod) (string, error) {
	if err := c.claimRevisions(ctx, ds, selector); err != nil {
		return "", err
	}
	current, owned, err := c.history.Sync(ctx, ds, &ds.Spec.Template, ds.Status.CollisionCount)
	if errors.Is(err, revision.ErrCollision) {
		next := ds.DeepCopy()
		cc := int32(1)
		if ds.Status.CollisionCount != nil {
			cc = *ds.Status.CollisionCount + 1
		}
		next.Status.CollisionCount = &cc
		if _, uerr := c.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); uerr != nil {
			return "", uerr
		}
		return "", fmt.Errorf("%w; collision count now %d", err, cc)
	}
	if err != nil {
		return "", err
	}
	hash := current.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	inUse := map[string]bool{current.Name: true}
	for _, p := range pods {
		if h := p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; h != "" {
			inUse[ds.Name+"-"+h] = true
		}
	}
	limit := int32(revision.DefaultHistoryLimit)
	if ds.Spec.RevisionHistoryLimit != nil {
		limit = *ds.Spec.RevisionHistoryLimit
	}
	// Kubernetes' DaemonSet controller counts every old revision against the limit, including
	// ones pods still run (those are kept; fewer unused ones are), unlike the StatefulSet's.
	for _, r := range owned {
		if r.Name != current.Name && inUse[r.Name] && limit > 0 {
			limit--
		}
	}
	return hash, c.history.Prune(ctx, owned, inUse, limit)
}

// claimRevisions adopts the orphaned ControllerRevisions the DaemonSet selects and releases owned
// ones it no longer selects, as Kubernetes' controlledHistories does: a DaemonSet deleted with
// --cascade=orphan and created again takes its history back (and its template's revision, which
// it could not create again under the same name). An adopted revision counts as owned once the
// cache has seen it; until then the revision sync fails and is retried.
func (c *Controller) claimRevisions(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector) error {
	all, err := c.revLister.ControllerRevisions(ds.Namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	objs := make([]metav1.Object, len(all))
	for i, r := range all {
		objs[i] = r
	}
	cl := controllerref.Claimer{
		Owner: ds, OwnerGVK: controllerKind, Selector: selector,
		Patch: func(ctx context.Context, ns, name string, patch []byte) error {
			_, err := c.client.AppsV1().ControllerRevisions(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		},
		CanAdopt: controllerref.RecheckOwner(ds, func(ctx context.Context) (metav1.Object, error) {
			return c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		}),
	}
	_, err = cl.Claim(ctx, objs)
	return err
}
