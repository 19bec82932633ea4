package daemonset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffkube/skiff/controllers/revision"
)

// history is a DaemonSet's revisions after syncHistory: the current template's, and every owned
// one (the current one included), oldest first.
type history struct {
	current *appsv1.ControllerRevision
	owned   []*appsv1.ControllerRevision
}

// hash is the current revision's controller-revision-hash, the one the DaemonSet's pods carry.
func (h history) hash() string { return h.current.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] }

// syncHistory makes sure the current template has the newest ControllerRevision and removes other
// revisions of it (relabelling their pods, in place in pods too). Old revisions are left for
// pruneHistory.
func (c *Controller) syncHistory(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector, pods []*corev1.Pod) (history, error) {
	// Orphaned revisions the DaemonSet selects are adopted and owned ones it no longer selects let
	// go, as Kubernetes' controlledHistories does.
	latest := func(ctx context.Context) (metav1.Object, error) {
		return c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	}
	if err := c.history.Claim(ctx, ds, selector, latest, true); err != nil {
		return history{}, err
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
			return history{}, uerr
		}
		return history{}, fmt.Errorf("%w; collision count now %d", err, cc)
	}
	if err != nil {
		return history{}, err
	}
	current, owned, err = c.labelRevisionsByName(ctx, current, owned)
	if err != nil {
		return history{}, err
	}
	h := history{current: current, owned: owned}
	if dups := revision.Duplicates(current, owned); len(dups) > 0 {
		if err := c.dedupHistory(ctx, ds, h.hash(), dups, pods); err != nil {
			return history{}, err
		}
		h.owned = slices.DeleteFunc(owned, func(r *appsv1.ControllerRevision) bool { return slices.Contains(dups, r) })
	}
	return h, nil
}

// pruneHistory deletes the oldest revisions no pod runs beyond the DaemonSet's history limit.
// As in Kubernetes, only a sync whose earlier creations have all been observed may call it: a pod
// created by an earlier sync but not yet in the cache could otherwise leave its revision looking
// unused (after a template change, it is no longer the current one) and see it deleted.
func (c *Controller) pruneHistory(ctx context.Context, ds *appsv1.DaemonSet, h history, pods []*corev1.Pod) error {
	inUse := revisionsInUse(h.current, h.owned, pods)
	limit := int32(revision.DefaultHistoryLimit)
	if ds.Spec.RevisionHistoryLimit != nil {
		limit = *ds.Spec.RevisionHistoryLimit
	}
	// Kubernetes' DaemonSet controller counts every old revision against the limit, including
	// ones pods still run (those are kept; fewer unused ones are), unlike the StatefulSet's.
	for _, r := range h.owned {
		if r.Name != h.current.Name && inUse[r.Name] && limit > 0 {
			limit--
		}
	}
	return c.history.Prune(ctx, h.owned, inUse, limit)
}

// labelRevisionsByName gives each owned revision without a controller-revision-hash label that
// label, valued by the revision's name, as Kubernetes' DaemonSet controller does. Revisions made by
// controllers older than the label, or by hand, can then be matched to the pods that run them; and
// the current one gives new pods a hash to carry (with none, no pod would ever count as up to date
// and every rolling update would start over). The name is used rather than a hash of the template
// because no other revision can have it. The updated revisions replace the cached ones in the
// returned current and owned.
func (c *Controller) labelRevisionsByName(ctx context.Context, current *appsv1.ControllerRevision, owned []*appsv1.ControllerRevision) (*appsv1.ControllerRevision, []*appsv1.ControllerRevision, error) {
	for i, r := range owned {
		if _, ok := r.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; ok {
			continue
		}
		next := r.DeepCopy()
		if next.Labels == nil {
			next.Labels = map[string]string{}
		}
		next.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = next.Name
		updated, err := c.client.AppsV1().ControllerRevisions(r.Namespace).Update(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("label controller revision %s with its name: %w", r.Name, err)
		}
		owned[i] = updated
		if r.Name == current.Name {
			current = updated
		}
	}
	return current, owned, nil
}

// revisionsInUse names the current revision and every owned one a pod runs. As in Kubernetes, a
// pod is matched to a revision by the revision's hash label, not by its name: a revision adopted
// from a DaemonSet of another name, or named by an older controller, is still the one its pods run.
func revisionsInUse(current *appsv1.ControllerRevision, owned []*appsv1.ControllerRevision, pods []*corev1.Pod) map[string]bool {
	liveHashes := map[string]bool{}
	for _, p := range pods {
		if h := p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; h != "" {
			liveHashes[h] = true
		}
	}
	inUse := map[string]bool{current.Name: true}
	for _, r := range owned {
		if liveHashes[r.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] {
			inUse[r.Name] = true
		}
	}
	return inUse
}

// dedupHistory removes other revisions of the current template, as Kubernetes' DaemonSet
// controller does: their pods are relabelled with the current revision's hash (they run its
// template; pods is updated in place), then the duplicates are deleted.
func (c *Controller) dedupHistory(ctx context.Context, ds *appsv1.DaemonSet, hash string, dups []*appsv1.ControllerRevision, pods []*corev1.Pod) error {
	dupHashes := map[string]bool{}
	for _, r := range dups {
		if h := r.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; h != "" {
			dupHashes[h] = true
		}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: hash}}})
	if err != nil {
		return err
	}
	for i, p := range pods {
		if !dupHashes[p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] {
			continue
		}
		relabelled, err := c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil:
			pods[i] = relabelled // so this sync does not see it as old
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("relabel daemon pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	for _, r := range dups {
		err := c.client.AppsV1().ControllerRevisions(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete duplicate controller revision %s: %w", r.Name, err)
		}
	}
	return nil
}
