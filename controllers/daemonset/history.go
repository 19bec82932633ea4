package daemonset

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiffkube/skiff/controllers/controllerref"
	"github.com/skiffkube/skiff/controllers/deployment"
)

// defaultRevisionHistoryLimit is apps/v1's default for spec.revisionHistoryLimit.
const defaultRevisionHistoryLimit = 10

// revisionData is what a ControllerRevision of a DaemonSet holds: the template as a strategic merge
// patch that replaces it, which is what kubectl rollout undo applies back to the DaemonSet.
func revisionData(ds *appsv1.DaemonSet) ([]byte, error) {
	tmpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&ds.Spec.Template)
	if err != nil {
		return nil, err
	}
	tmpl["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": tmpl}})
}

// syncHistory makes sure the current template has a ControllerRevision with the highest revision
// number, prunes old unused revisions beyond the history limit, and returns the current hash.
func (c *Controller) syncHistory(ctx context.Context, ds *appsv1.DaemonSet, pods []*corev1.Pod) (string, error) {
	all, err := c.revLister.ControllerRevisions(ds.Namespace).List(labels.Everything())
	if err != nil {
		return "", err
	}
	var owned []*appsv1.ControllerRevision
	var maxRev int64
	for _, r := range all {
		if ref := metav1.GetControllerOf(r); ref != nil && ref.UID == ds.UID {
			owned = append(owned, r)
			maxRev = max(maxRev, r.Revision)
		}
	}
	data, err := revisionData(ds)
	if err != nil {
		return "", err
	}
	hash := deployment.ComputeHash(&ds.Spec.Template, ds.Status.CollisionCount)
	name := ds.Name + "-" + hash
	var current *appsv1.ControllerRevision
	for _, r := range owned {
		if r.Name == name {
			current = r
		}
	}
	switch {
	case current != nil && !bytes.Equal(current.Data.Raw, data) && !sameTemplate(current.Data.Raw, data):
		// A hash collision: bump the collision count so the next sync computes another name.
		next := ds.DeepCopy()
		cc := int32(0)
		if ds.Status.CollisionCount != nil {
			cc = *ds.Status.CollisionCount
		}
		cc++
		next.Status.CollisionCount = &cc
		if _, err := c.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
			return "", err
		}
		return "", fmt.Errorf("controller revision %s holds another template; collision count now %d", name, cc)
	case current != nil && current.Revision < maxRev:
		// Rolled back to an older template: it becomes the newest revision.
		next := current.DeepCopy()
		next.Revision = maxRev + 1
		if _, err := c.client.AppsV1().ControllerRevisions(ds.Namespace).Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			return "", fmt.Errorf("renumber controller revision %s: %w", name, err)
		}
	case current == nil:
		lbls := map[string]string{}
		for k, v := range ds.Spec.Template.Labels {
			lbls[k] = v
		}
		lbls[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
		rev := &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: ds.Namespace, Labels: lbls,
				OwnerReferences: []metav1.OwnerReference{controllerref.New(ds, controllerKind)},
			},
			Data:     runtime.RawExtension{Raw: data},
			Revision: maxRev + 1,
		}
		created, err := c.client.AppsV1().ControllerRevisions(ds.Namespace).Create(ctx, rev, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("controller revision %s exists but is not in the cache yet", name)
		}
		if err != nil {
			return "", fmt.Errorf("create controller revision %s: %w", name, err)
		}
		owned = append(owned, created)
	}
	return hash, c.pruneHistory(ctx, ds, owned, hash, pods)
}

// sameTemplate compares two revision data blobs semantically (key order may differ).
func sameTemplate(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// pruneHistory deletes the oldest revisions that no pod runs, beyond revisionHistoryLimit.
func (c *Controller) pruneHistory(ctx context.Context, ds *appsv1.DaemonSet, owned []*appsv1.ControllerRevision, hash string, pods []*corev1.Pod) error {
	limit := int32(defaultRevisionHistoryLimit)
	if ds.Spec.RevisionHistoryLimit != nil {
		limit = *ds.Spec.RevisionHistoryLimit
	}
	inUse := map[string]bool{hash: true}
	for _, p := range pods {
		inUse[p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] = true
	}
	var unused []*appsv1.ControllerRevision
	for _, r := range owned {
		if !inUse[r.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] {
			unused = append(unused, r)
		}
	}
	excess := len(unused) - int(limit)
	if excess <= 0 {
		return nil
	}
	sort.Slice(unused, func(i, j int) bool { return unused[i].Revision < unused[j].Revision })
	for _, r := range unused[:excess] {
		err := c.client.AppsV1().ControllerRevisions(ds.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete old controller revision %s: %w", r.Name, err)
		}
	}
	return nil
}
