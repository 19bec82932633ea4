package garbagecollector

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// item identifies one object to look at. Items name a kind, not a resource, because owner
// references do; sync maps the kind to a resource.
type item struct {
	apiVersion, kind, namespace, name string
	uid                               types.UID
}

// sep cannot occur in any of an item's fields.
const sep = "\x1f"

func (i item) key() string {
	return strings.Join([]string{i.apiVersion, i.kind, i.namespace, i.name, string(i.uid)}, sep)
}

func parseItem(key string) (item, error) {
	p := strings.Split(key, sep)
	if len(p) != 5 {
		return item{}, fmt.Errorf("garbagecollector: malformed key %q", key)
	}
	return item{apiVersion: p[0], kind: p[1], namespace: p[2], name: p[3], uid: types.UID(p[4])}, nil
}

func (i item) String() string {
	if i.namespace == "" {
		return fmt.Sprintf("%s %s (%s)", i.kind, i.name, i.uid)
	}
	return fmt.Sprintf("%s %s/%s (%s)", i.kind, i.namespace, i.name, i.uid)
}

func itemOf(m *monitor, o *metav1.PartialObjectMetadata) item {
	return item{apiVersion: m.gvr.GroupVersion().String(), kind: m.kind, namespace: o.Namespace, name: o.Name, uid: o.UID}
}

// ownerItem is the item of an owner reference held by an object in namespace ns. For a
// cluster-scoped owner the namespace is dropped in sync, once the kind's scope is known.
func ownerItem(ref metav1.OwnerReference, ns string) item {
	return item{apiVersion: ref.APIVersion, kind: ref.Kind, namespace: ns, name: ref.Name, uid: ref.UID}
}

// partial is the metadata of a monitored object: the object itself from a metadata informer, a
// copy of a typed object's metadata from a shared informer. The copy is shallow: its slices are
// the cache's, and like everything from a cache they are only read.
func partial(obj any) *metav1.PartialObjectMetadata {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	switch o := obj.(type) {
	case *metav1.PartialObjectMetadata:
		return o
	case metav1.ObjectMetaAccessor:
		if m, ok := o.GetObjectMeta().(*metav1.ObjectMeta); ok && m != nil {
			return &metav1.PartialObjectMetadata{ObjectMeta: *m}
		}
	}
	return nil
}

func (c *Controller) enqueue(i item) { c.queue.Add(i.key()) }

// deletingInForeground: the object is being deleted and waits for its blocking dependents.
func deletingInForeground(o *metav1.PartialObjectMetadata) bool {
	return o.DeletionTimestamp != nil && slices.Contains(o.Finalizers, metav1.FinalizerDeleteDependents)
}

// deletingWithPolicy: the object waits for the garbage collector (orphan or foreground).
func deletingWithPolicy(o *metav1.PartialObjectMetadata) bool {
	return o.DeletionTimestamp != nil &&
		(slices.Contains(o.Finalizers, metav1.FinalizerOrphanDependents) || slices.Contains(o.Finalizers, metav1.FinalizerDeleteDependents))
}

func (c *Controller) onAdd(m *monitor, obj any) {
	o := partial(obj)
	if o == nil {
		return
	}
	if len(o.OwnerReferences) > 0 || deletingWithPolicy(o) {
		c.enqueue(itemOf(m, o))
	}
}

func (c *Controller) onUpdate(m *monitor, oldObj, curObj any) {
	old, cur := partial(oldObj), partial(curObj)
	if old == nil || cur == nil {
		return
	}
	refsChanged := !slices.EqualFunc(old.OwnerReferences, cur.OwnerReferences, func(a, b metav1.OwnerReference) bool {
		return a.UID == b.UID && ptrEq(a.BlockOwnerDeletion, b.BlockOwnerDeletion)
	})
	deletionStarted := old.DeletionTimestamp == nil && cur.DeletionTimestamp != nil
	finalizersChanged := !slices.Equal(old.Finalizers, cur.Finalizers)
	if refsChanged || deletionStarted || (finalizersChanged && deletingWithPolicy(cur)) {
		c.enqueue(itemOf(m, cur))
	}
	if deletionStarted {
		// An owner deleting in the foreground waits for this object.
		c.enqueueOwners(cur)
	}
	if refsChanged {
		// An owner this object no longer references, or no longer blocks, may be waiting for it.
		for _, r := range old.OwnerReferences {
			i := slices.IndexFunc(cur.OwnerReferences, func(x metav1.OwnerReference) bool { return x.UID == r.UID })
			if i < 0 || (blocks(r) && !blocks(cur.OwnerReferences[i])) {
				c.enqueue(ownerItem(r, cur.Namespace))
			}
		}
	}
}

func (c *Controller) onDelete(m *monitor, obj any) {
	o := partial(obj)
	if o == nil {
		return
	}
	// The dependents of a deleted owner may now be garbage.
	for _, d := range c.dependentsOf(string(o.UID)) {
		c.enqueue(itemOf(d.m, d.obj))
	}
	c.enqueueOwners(o)
}

func (c *Controller) enqueueOwners(o *metav1.PartialObjectMetadata) {
	for _, r := range o.OwnerReferences {
		c.enqueue(ownerItem(r, o.Namespace))
	}
}

func blocks(r metav1.OwnerReference) bool {
	return r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion
}

func ptrEq(a, b *bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
