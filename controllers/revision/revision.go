package revision

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"

	"github.com/skiffkube/skiff/controllers/controllerref"
	"github.com/skiffkube/skiff/controllers/deployment"
)

// DefaultHistoryLimit is apps/v1's default revisionHistoryLimit.
const DefaultHistoryLimit = 10

// ErrCollision means a revision with the template's name holds another template: the owner's
// status.collisionCount must be bumped so the next hash differs.
var ErrCollision = errors.New("revision: hash collision")

// Data is a template as revision data: {"spec":{"template":{...,"$patch":"replace"}}}.
func Data(template *corev1.PodTemplateSpec) ([]byte, error) {
	tmpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(template)
	if err != nil {
		return nil, err
	}
	tmpl["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": tmpl}})
}

// Template reads the pod template back from a revision.
func Template(rev *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	var d struct {
		Spec struct {
			Template map[string]any `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(rev.Data.Raw, &d); err != nil {
		return nil, fmt.Errorf("revision %s: %w", rev.Name, err)
	}
	delete(d.Spec.Template, "$patch")
	t := &corev1.PodTemplateSpec{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(d.Spec.Template, t); err != nil {
		return nil, fmt.Errorf("revision %s: %w", rev.Name, err)
	}
	return t, nil
}

// Hash is the template's hash (as the Deployment controller's pod-template-hash).
func Hash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	return deployment.ComputeHash(template, collisionCount)
}

// History manages one owner kind's revisions.
type History struct {
	Client   kubernetes.Interface
	Lister   appslisters.ControllerRevisionLister
	OwnerGVK schema.GroupVersionKind
	// HashLabel is set on each revision to its hash (controller-revision-hash).
	HashLabel string
}

// Owned lists the revisions controlled by owner, oldest revision first.
func (h *History) Owned(owner metav1.Object) ([]*appsv1.ControllerRevision, error) {
	all, err := h.Lister.ControllerRevisions(owner.GetNamespace()).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []*appsv1.ControllerRevision
	for _, r := range all {
		if ref := metav1.GetControllerOf(r); ref != nil && ref.UID == owner.GetUID() {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Revision < out[j].Revision })
	return out, nil
}

// Claim makes owner the controller of the orphaned revisions selector matches, so an owner deleted
// with --cascade=orphan and made again takes its history back (its template's revision, under the
// same name, could otherwise never be made again). With release it also lets go of owned revisions
// selector no longer matches: Kubernetes' DaemonSet controller does both, its StatefulSet controller
// only adopts. latest reads the owner from the API server, to recheck it before adopting. An adopted
// revision counts as owned once the cache has seen it.
func (h *History) Claim(ctx context.Context, owner metav1.Object, selector labels.Selector, latest func(context.Context) (metav1.Object, error), release bool) error {
	all, err := h.Lister.ControllerRevisions(owner.GetNamespace()).List(labels.Everything())
	if err != nil {
		return err
	}
	var objs []metav1.Object
	for _, r := range all {
		if release || metav1.GetControllerOfNoCopy(r) == nil {
			objs = append(objs, r)
		}
	}
	if len(objs) == 0 {
		return nil
	}
	cl := controllerref.Claimer{
		Owner: owner, OwnerGVK: h.OwnerGVK, Selector: selector,
		Patch: func(ctx context.Context, ns, name string, patch []byte) error {
			_, err := h.Client.AppsV1().ControllerRevisions(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		},
		CanAdopt: controllerref.RecheckOwner(owner, latest),
	}
	_, err = cl.Claim(ctx, objs)
	return err
}

// Sync makes sure template has a revision numbered above every other and returns it with all
// owned revisions (oldest first). As Kubernetes' DaemonSet and StatefulSet controllers do, it finds
// the template's revision by its data, not its name: a template rolled back to keeps the revision
// it had (renumbered as the newest), even though a collision count raised since then would give a
// new revision of it another name. Of several revisions holding the template, the newest is used;
// Duplicates lists the others. ErrCollision asks the caller to bump the collision count.
func (h *History) Sync(ctx context.Context, owner metav1.Object, template *corev1.PodTemplateSpec, collisionCount *int32) (*appsv1.ControllerRevision, []*appsv1.ControllerRevision, error) {
	owned, err := h.Owned(owner)
	if err != nil {
		return nil, nil, err
	}
	data, err := Data(template)
	if err != nil {
		return nil, nil, err
	}
	var current *appsv1.ControllerRevision
	var maxOther int64 // the highest number among revisions of other templates
	for _, r := range owned {
		switch {
		case !sameJSON(r.Data.Raw, data):
			maxOther = max(maxOther, r.Revision)
		case current == nil || r.Revision >= current.Revision:
			current = r
		}
	}
	if current == nil {
		current, err = h.create(ctx, owner, template, data, collisionCount, maxOther+1, owned)
		if err != nil {
			return nil, nil, err
		}
		if ref := metav1.GetControllerOfNoCopy(current); ref != nil && ref.UID == owner.GetUID() {
			owned = append(owned, current)
		}
		return current, owned, nil
	}
	if current.Revision <= maxOther {
		// Rolled back to an older template: its revision becomes the newest.
		next := current.DeepCopy()
		next.Revision = maxOther + 1
		updated, err := h.Client.AppsV1().ControllerRevisions(owner.GetNamespace()).Update(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("renumber controller revision %s: %w", current.Name, err)
		}
		for i, r := range owned {
			if r.Name == current.Name {
				owned[i] = updated
			}
		}
		current = updated
	}
	sort.Slice(owned, func(i, j int) bool { return owned[i].Revision < owned[j].Revision })
	return current, owned, nil
}

// create makes the revision of a template no owned revision holds, named after its hash. A
// revision of that name that holds the same template (one made by an earlier sync the cache has
// not seen yet) is returned, as in Kubernetes; one holding another template is a collision.
func (h *History) create(ctx context.Context, owner metav1.Object, template *corev1.PodTemplateSpec, data []byte, collisionCount *int32, number int64, owned []*appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	hash := Hash(template, collisionCount)
	name := owner.GetName() + "-" + hash
	for _, r := range owned {
		if r.Name == name {
			return nil, fmt.Errorf("%w: controller revision %s holds another template", ErrCollision, name)
		}
	}
	lbls := map[string]string{}
	for k, v := range template.Labels {
		lbls[k] = v
	}
	lbls[h.HashLabel] = hash
	// The owner's annotations go along, as in Kubernetes: kubectl rollout history shows
	// the kubernetes.io/change-cause of each revision from them.
	var annotations map[string]string
	if a := owner.GetAnnotations(); len(a) > 0 {
		annotations = make(map[string]string, len(a))
		for k, v := range a {
			annotations[k] = v
		}
	}
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: owner.GetNamespace(), Labels: lbls, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{controllerref.New(owner, h.OwnerGVK)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: number,
	}
	revs := h.Client.AppsV1().ControllerRevisions(owner.GetNamespace())
	created, err := revs.Create(ctx, rev, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, gerr := revs.Get(ctx, name, metav1.GetOptions{})
		if gerr != nil {
			return nil, fmt.Errorf("get controller revision %s: %w", name, gerr)
		}
		if sameJSON(existing.Data.Raw, data) {
			return existing, nil
		}
		return nil, fmt.Errorf("%w: controller revision %s holds another template", ErrCollision, name)
	}
	if err != nil {
		return nil, fmt.Errorf("create controller revision %s: %w", name, err)
	}
	return created, nil
}

// Duplicates returns the revisions in owned, other than current, that hold current's template.
// Kubernetes' DaemonSet controller moves their pods to current and deletes them.
func Duplicates(current *appsv1.ControllerRevision, owned []*appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	var out []*appsv1.ControllerRevision
	for _, r := range owned {
		if r.Name != current.Name && sameJSON(r.Data.Raw, current.Data.Raw) {
			out = append(out, r)
		}
	}
	return out
}

func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// Prune deletes the oldest revisions not in inUse (by name) beyond limit.
func (h *History) Prune(ctx context.Context, owned []*appsv1.ControllerRevision, inUse map[string]bool, limit int32) error {
	var unused []*appsv1.ControllerRevision
	for _, r := range owned {
		if !inUse[r.Name] {
			unused = append(unused, r)
		}
	}
	excess := len(unused) - int(limit)
	if excess <= 0 {
		return nil
	}
	sort.Slice(unused, func(i, j int) bool { return unused[i].Revision < unused[j].Revision })
	for _, r := range unused[:excess] {
		err := h.Client.AppsV1().ControllerRevisions(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete old controller revision %s: %w", r.Name, err)
		}
	}
	return nil
}
