package controllerref

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// New returns the ownerReference a controller puts on the objects it creates.
func New(owner metav1.Object, gvk schema.GroupVersionKind) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{
		APIVersion:         gvk.GroupVersion().String(),
		Kind:               gvk.Kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		Controller:         &yes,
		BlockOwnerDeletion: &yes,
	}
}

// PatchFunc applies a merge patch to the named object of the managed kind.
type PatchFunc func(ctx context.Context, namespace, name string, patch []byte) error

// Claimer adopts and releases objects for one controller object.
type Claimer struct {
	Owner    metav1.Object
	OwnerGVK schema.GroupVersionKind
	Selector labels.Selector
	Patch    PatchFunc
	// CanAdopt re-reads the owner from the API server (not the cache) and fails if it is gone, has a new
	// uid, or is being deleted; it runs once, before the first adoption. Nil allows adoption.
	CanAdopt func(ctx context.Context) error
	// Finalizers are added to an object in the patch that adopts it (the Job controller's tracking
	// finalizer, as Kubernetes' PodControllerRefManager adds it).
	Finalizers []string
}

// Claim returns the objects the owner controls after adopting matching orphans and releasing owned
// objects that no longer match. Objects being deleted are not adopted. Errors are
// returned after the rest of the list was processed; NotFound during a patch is no error, and an orphan
// gone before it could be adopted is not claimed.
func (c *Claimer) Claim(ctx context.Context, objs []metav1.Object) ([]metav1.Object, error) {
	var claimed []metav1.Object
	var firstErr error
	adoptChecked := false
	var adoptErr error
	for _, o := range objs {
		ref := metav1.GetControllerOfNoCopy(o)
		matches := c.Selector.Matches(labels.Set(o.GetLabels()))
		switch {
		case ref != nil && ref.UID != c.Owner.GetUID():
			// Someone else's.
		case ref != nil:
			if matches {
				claimed = append(claimed, o)
				continue
			}
			if c.Owner.GetDeletionTimestamp() != nil {
				// Keep it: a dying owner leaves release to the garbage collector. An object
				// being deleted is still released (as Kubernetes does), so it stops counting
				// as the owner's, and a Job's tracking finalizer stops holding it.
				continue
			}
			if err := c.release(ctx, o); err != nil && !apierrors.IsNotFound(err) && firstErr == nil {
				firstErr = err
			}
		default:
			if !matches || o.GetDeletionTimestamp() != nil || c.Owner.GetDeletionTimestamp() != nil {
				continue
			}
			if !adoptChecked {
				adoptChecked = true
				if c.CanAdopt != nil {
					adoptErr = c.CanAdopt(ctx)
				}
			}
			if adoptErr != nil {
				if firstErr == nil {
					firstErr = adoptErr
				}
				continue
			}
			if err := c.adopt(ctx, o); err != nil {
				if !apierrors.IsNotFound(err) && firstErr == nil {
					firstErr = err
				}
				continue // gone (NotFound) or not adopted: not ours
			}
			claimed = append(claimed, o)
		}
	}
	return claimed, firstErr
}

func (c *Claimer) adopt(ctx context.Context, o metav1.Object) error {
	refs := append([]metav1.OwnerReference{}, o.GetOwnerReferences()...)
	refs = append(refs, New(c.Owner, c.OwnerGVK))
	fins := o.GetFinalizers()
	for _, f := range c.Finalizers {
		if !slices.Contains(fins, f) {
			fins = append(slices.Clone(fins), f)
		}
	}
	return c.patchRefs(ctx, o, refs, fins, "adopt")
}

// release drops the owner's reference and the finalizers it adds on adoption (Kubernetes'
// ReleasePod removes them too: a released pod must not wait for a Job that no longer tracks it).
func (c *Claimer) release(ctx context.Context, o metav1.Object) error {
	var refs []metav1.OwnerReference
	for _, r := range o.GetOwnerReferences() {
		if r.UID != c.Owner.GetUID() {
			refs = append(refs, r)
		}
	}
	fins := o.GetFinalizers()
	if slices.ContainsFunc(fins, func(f string) bool { return slices.Contains(c.Finalizers, f) }) {
		fins = slices.DeleteFunc(slices.Clone(fins), func(f string) bool { return slices.Contains(c.Finalizers, f) })
	}
	return c.patchRefs(ctx, o, refs, fins, "release")
}

// patchRefs writes refs, and fins when it differs from o's finalizers: the patch replaces each whole
// list, and its resourceVersion guard keeps a concurrent change safe.
func (c *Claimer) patchRefs(ctx context.Context, o metav1.Object, refs []metav1.OwnerReference, fins []string, verb string) error {
	var patch []byte
	var err error
	if slices.Equal(fins, o.GetFinalizers()) {
		patch, err = OwnerRefsPatch(o.GetUID(), o.GetResourceVersion(), refs)
	} else {
		if refs == nil {
			refs = []metav1.OwnerReference{}
		}
		if fins == nil {
			fins = []string{}
		}
		meta := map[string]any{"uid": o.GetUID(), "ownerReferences": refs, "finalizers": fins}
		if rv := o.GetResourceVersion(); rv != "" {
			meta["resourceVersion"] = rv
		}
		patch, err = json.Marshal(map[string]any{"metadata": meta})
	}
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, o.GetNamespace(), o.GetName(), patch); err != nil {
		return fmt.Errorf("%s %s/%s: %w", verb, o.GetNamespace(), o.GetName(), err)
	}
	return nil
}

// OwnerRefsPatch builds a merge patch that replaces metadata.ownerReferences, guarded by uid and
// resourceVersion.
func OwnerRefsPatch(uid types.UID, resourceVersion string, refs []metav1.OwnerReference) ([]byte, error) {
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	meta := map[string]any{"uid": uid, "ownerReferences": refs}
	if resourceVersion != "" {
		meta["resourceVersion"] = resourceVersion
	}
	return json.Marshal(map[string]any{"metadata": meta})
}

// RecheckOwner is a CanAdopt helper: get fetches the owner fresh from the API server.
func RecheckOwner(owner metav1.Object, get func(ctx context.Context) (metav1.Object, error)) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		fresh, err := get(ctx)
		if err != nil {
			return fmt.Errorf("recheck %s/%s before adopting: %w", owner.GetNamespace(), owner.GetName(), err)
		}
		if fresh.GetUID() != owner.GetUID() {
			return fmt.Errorf("original %s/%s is gone: got uid %s, wanted %s", owner.GetNamespace(), owner.GetName(), fresh.GetUID(), owner.GetUID())
		}
		if fresh.GetDeletionTimestamp() != nil {
			return fmt.Errorf("%s/%s is being deleted; not adopting", owner.GetNamespace(), owner.GetName())
		}
		return nil
	}
}

// ControllerOf returns obj's controller of kind gvk as get finds it (from a
// lister), or false when obj has no such controller or the one found is a
// different incarnation (another UID) of the same name. As in Kubernetes,
// the reference's kind is checked but not its apiVersion, which may name an
// older version of the same kind; the UID identifies the object.
func ControllerOf[T metav1.Object](obj metav1.Object, gvk schema.GroupVersionKind, get func(namespace, name string) (T, error)) (T, bool) {
	var none T
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != gvk.Kind {
		return none, false
	}
	owner, err := get(obj.GetNamespace(), ref.Name)
	if err != nil || owner.GetUID() != ref.UID {
		return none, false
	}
	return owner, true
}
