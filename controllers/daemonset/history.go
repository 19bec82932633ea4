package daemonset

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/skiffkube/skiff/controllers/revision"
)

// syncHistory makes sure the current template has the newest ControllerRevision, prunes old unused
// revisions beyond the history limit, and returns the current hash (the pods' controller-revision-hash).
func (c *Controller) syncHistory(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector, pods []*corev1.Pod) (string, error) {
	// Orphaned revisions the DaemonSet selects are adopted and owned ones it no longer selects let
	// go, as Kubernetes' controlledHistories does.
	latest := func(ctx context.Context) (metav1.Object, error) {
		return c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	}
	if err := c.history.Claim(ctx, ds, selector, latest, true); err != nil {
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
