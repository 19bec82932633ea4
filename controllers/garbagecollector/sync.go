package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
)

// Event reasons.
const (
	ReasonDeleted            = "GarbageCollected"
	ReasonOrphaned           = "OrphanedDependents"
	ReasonDependentsDeleted  = "DependentsDeleted"
	ReasonOwnerRefsRemoved   = "OwnerRefsRemoved"
	ReasonInvalidOwnerRefNS  = "OwnerRefInvalidNamespace"
	messageDependentsDeleted = "All dependents blocking deletion are gone"
)

// target is an item resolved to its resource.
type target struct {
	item
	gvr        schema.GroupVersionResource
	namespaced bool
}

func (c *Controller) resolve(i item) (target, error) {
	gv, err := schema.ParseGroupVersion(i.apiVersion)
	if err != nil {
		return target{}, fmt.Errorf("owner reference %s: %w", i, err)
	}
	mapping, err := c.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: i.kind}, gv.Version)
	if err != nil {
		return target{}, fmt.Errorf("map %s: %w", i, err)
	}
	t := target{item: i, gvr: mapping.Resource, namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace}
	if !t.namespaced {
		t.namespace = ""
	}
	return t, nil
}

func (c *Controller) client(t target) metadata.ResourceInterface {
	if t.namespaced {
		return c.md.Resource(t.gvr).Namespace(t.namespace)
	}
	return c.md.Resource(t.gvr)
}

// cached returns the monitor's copy of t, or nil.
func (c *Controller) cached(t target) *metav1.PartialObjectMetadata {
	m := c.monitorFor(t.gvr.GroupResource())
	if m == nil {
		return nil
	}
	key := t.name
	if t.namespaced {
		key = t.namespace + "/" + t.name
	}
	obj, ok, err := m.informer.GetIndexer().GetByKey(key)
	if err != nil || !ok {
		return nil
	}
	p := partial(obj)
	if p == nil || p.UID != t.uid {
		return nil
	}
	return p
}

// live reads t from the API server; nil when it is gone (or replaced by a namesake).
func (c *Controller) live(ctx context.Context, t target) (*metav1.PartialObjectMetadata, error) {
	o, err := c.client(t).Get(ctx, t.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if o.UID != t.uid {
		return nil, nil
	}
	return o, nil
}

func (c *Controller) sync(ctx context.Context, key string) error {
	i, err := parseItem(key)
	if err != nil {
		return nil // nothing to retry
	}
	t, err := c.resolve(i)
	if err != nil {
		return err
	}
	// Most items are dependents whose owners are all alive: decide that from the caches alone.
	if o := c.cached(t); o != nil && o.DeletionTimestamp == nil && c.allOwnersSolidInCache(t, o) {
		return nil
	}
	obj, err := c.live(ctx, t)
	if err != nil || obj == nil {
		return err
	}
	if obj.DeletionTimestamp != nil {
		switch {
		case slices.Contains(obj.Finalizers, metav1.FinalizerOrphanDependents):
			return c.orphanDependents(ctx, t, obj)
		case slices.Contains(obj.Finalizers, metav1.FinalizerDeleteDependents):
			return c.deleteDependents(ctx, t, obj)
		}
		return nil // being deleted for other reasons; its dependents follow once it is gone
	}
	if len(obj.OwnerReferences) == 0 {
		return nil
	}
	return c.collect(ctx, t, obj)
}

func (c *Controller) allOwnersSolidInCache(t target, o *metav1.PartialObjectMetadata) bool {
	for _, r := range o.OwnerReferences {
		ot, err := c.resolve(ownerItem(r, t.namespace))
		if err != nil || (ot.namespaced && !t.namespaced) {
			return false
		}
		owner := c.cached(ot)
		if owner == nil || owner.DeletionTimestamp != nil {
			return false
		}
	}
	return true
}

type ownerState int

const (
	ownerSolid      ownerState = iota // exists and is not waiting for its dependents
	ownerAbsent                       // gone, replaced, or not a valid owner for this object
	ownerWaiting                      // being deleted in the foreground
	ownerInvalid                      // namespaced, of a cluster-scoped dependent: not a reference the collector acts on
	ownerUnobserved                   // exists, but only a live read says so: its monitor has not seen it yet
)

// errOwnerUnobserved makes a dependent kept for an owner its monitor has not seen be judged again
// (with backoff, as Kubernetes requeues an owner "not observed via informer yet"). Only the owner's
// deletion event would bring the dependent back, and a monitor that has not seen an object may
// never send one: the owner's resource was discovered a moment ago and its first list runs
// after the owner is gone, or the owner came and went while the watch was being re-established.
var errOwnerUnobserved = errors.New("an owner exists but its monitor has not seen it yet")

func (c *Controller) ownerState(ctx context.Context, dep target, ref metav1.OwnerReference) (ownerState, error) {
	ot, err := c.resolve(ownerItem(ref, dep.namespace))
	if err != nil {
		return ownerSolid, err
	}
	if ot.namespaced && !dep.namespaced {
		// A cluster-scoped object cannot be owned by a namespaced one. Kubernetes leaves such an
		// object alone (neither deleted nor patched): deleting, say, a ClusterRole for it would
		// be worse. As Kubernetes, the mistake is reported once the owner is found in a namespace.
		if c.elsewhere(ot) != nil {
			c.reportInvalidNamespace(dep, ref)
		}
		return ownerInvalid, nil
	}
	owner := c.cached(ot)
	observed := owner != nil
	if !observed {
		// The cache may not have seen the owner yet: only a live read may call it gone.
		if owner, err = c.live(ctx, ot); err != nil {
			return ownerSolid, err
		}
	}
	switch {
	case owner == nil:
		if ot.namespaced && c.elsewhere(ot) != nil {
			// The owner exists, in another namespace: as Kubernetes, say so on the dependent,
			// which is otherwise treated as that of a gone owner.
			c.reportInvalidNamespace(dep, ref)
		}
		return ownerAbsent, nil
	case owner.DeletionTimestamp != nil && slices.Contains(owner.Finalizers, metav1.FinalizerDeleteDependents):
		return ownerWaiting, nil
	case !observed:
		return ownerUnobserved, nil
	}
	return ownerSolid, nil
}

// reportInvalidNamespace records, on dep, that its reference names an owner that does not exist
// in dep's namespace (or, for a cluster-scoped dep, outside any), in Kubernetes' words.
func (c *Controller) reportInvalidNamespace(dep target, ref metav1.OwnerReference) {
	c.recorder.Eventf(objRef(dep), corev1.EventTypeWarning, ReasonInvalidOwnerRefNS,
		"ownerRef [%s/%s, namespace: %s, name: %s, uid: %s] does not exist in namespace %q",
		ref.APIVersion, ref.Kind, dep.namespace, ref.Name, ref.UID, dep.namespace)
}

// collect handles a dependent that is not being deleted.
func (c *Controller) collect(ctx context.Context, t target, obj *metav1.PartialObjectMetadata) error {
	var solid, gone []metav1.OwnerReference
	waiting, unobserved := 0, 0
	for _, r := range obj.OwnerReferences {
		st, err := c.ownerState(ctx, t, r)
		if err != nil {
			return err
		}
		switch st {
		case ownerSolid:
			solid = append(solid, r)
		case ownerUnobserved:
			unobserved++
			solid = append(solid, r)
		case ownerAbsent:
			gone = append(gone, r)
		case ownerWaiting:
			waiting++
			gone = append(gone, r)
		case ownerInvalid:
			return nil // reported; retrying would not make it valid
		}
	}
	if len(solid) > 0 {
		if err := c.forgetGoneOwners(ctx, t, obj, gone); err != nil {
			return err
		}
		if unobserved > 0 {
			return fmt.Errorf("%s kept: %w", t.item, errOwnerUnobserved)
		}
		return nil
	}
	policy := metav1.DeletePropagationBackground
	switch {
	case slices.Contains(obj.Finalizers, metav1.FinalizerOrphanDependents):
		policy = metav1.DeletePropagationOrphan
	case slices.Contains(obj.Finalizers, metav1.FinalizerDeleteDependents):
		policy = metav1.DeletePropagationForeground
	case waiting > 0:
		deps := c.dependentsOf(string(t.uid))
		if len(deps) == 0 {
			break
		}
		// An owner waits for us: our own dependents must go before we do.
		policy = metav1.DeletePropagationForeground
		if slices.ContainsFunc(deps, func(d dependent) bool { return deletingInForeground(d.obj) }) {
			// One of them is itself waiting for its dependents: likely a cycle (A owns B owns
			// A), where each would wait for the other for ever. As Kubernetes does, stop
			// blocking our owners first; the patch brings this item back.
			unblocked, err := c.unblockOwnerRefs(ctx, t, obj)
			if err != nil || unblocked {
				return err
			}
		}
	}
	// Delete only the state that was judged: another worker may have just
	// dropped the references (orphaning by the owner's sync) after obj was
	// read and before the owner went away, and a delete by UID alone would
	// then remove an object that has no owner left. A conflict where the
	// references changed is judged again from a fresh read.
	uid, rv := t.uid, obj.ResourceVersion
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}, PropagationPolicy: &policy}
	err := c.client(t).Delete(ctx, t.name, opts)
	if apierrors.IsConflict(err) {
		// As Kubernetes: a change that left the owner references as judged (a status update,
		// say) does not change the verdict, and an object updated often would otherwise never
		// be deleted; only the UID is then required to match.
		if cur, gerr := c.live(ctx, t); gerr == nil && cur == nil {
			return nil
		} else if gerr == nil && cur.ResourceVersion != rv && apiequality.Semantic.DeepEqual(cur.OwnerReferences, obj.OwnerReferences) {
			opts.Preconditions.ResourceVersion = nil
			err = c.client(t).Delete(ctx, t.name, opts)
		}
	}
	if apierrors.IsNotFound(err) {
		return nil // gone already
	}
	if apierrors.IsConflict(err) {
		return fmt.Errorf("delete %s: changed since it was read, judging it again: %w", t.item, err)
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", t.item, err)
	}
	c.recorder.Eventf(objRef(t), corev1.EventTypeNormal, ReasonDeleted,
		"Deleted (propagation %s): every owner is gone or being deleted (%s)", policy, ownerList(obj.OwnerReferences))
	return nil
}

// forgetGoneOwners drops the references to gone owners from an object kept for its live ones.
func (c *Controller) forgetGoneOwners(ctx context.Context, t target, obj *metav1.PartialObjectMetadata, gone []metav1.OwnerReference) error {
	if len(gone) == 0 {
		return nil
	}
	if err := c.removeOwnerRefs(ctx, t, obj, gone); err != nil {
		return err
	}
	c.recorder.Eventf(objRef(t), corev1.EventTypeNormal, ReasonOwnerRefsRemoved,
		"Removed %d owner reference(s) to owners that are gone or being deleted", len(gone))
	return nil
}

// orphanDependents drops the owner's reference from every dependent, then the orphan finalizer.
func (c *Controller) orphanDependents(ctx context.Context, owner target, obj *metav1.PartialObjectMetadata) error {
	if !c.synced() {
		c.queue.AddAfter(owner.key(), c.opts.Recheck/5)
		return nil
	}
	deps := c.dependentsOf(string(owner.uid))
	for _, d := range deps {
		dt := target{item: itemOf(d.m, d.obj), gvr: d.m.gvr, namespaced: d.m.namespaced}
		live, err := c.live(ctx, dt)
		if err != nil {
			return err
		}
		if live == nil {
			continue
		}
		var refs []metav1.OwnerReference
		for _, r := range live.OwnerReferences {
			if r.UID == owner.uid {
				refs = append(refs, r)
			}
		}
		if err := c.removeOwnerRefs(ctx, dt, live, refs); err != nil {
			return err
		}
	}
	if err := c.removeFinalizer(ctx, owner, obj, metav1.FinalizerOrphanDependents); err != nil {
		return err
	}
	c.recorder.Eventf(objRef(owner), corev1.EventTypeNormal, ReasonOrphaned, "Orphaned %d dependent(s)", len(deps))
	return nil
}

// deleteDependents drives a foreground deletion: every dependent is queued (its own sync deletes
// it, since this owner is waiting), and the finalizer goes once no blocking dependent is left.
func (c *Controller) deleteDependents(ctx context.Context, owner target, obj *metav1.PartialObjectMetadata) error {
	if !c.synced() {
		c.queue.AddAfter(owner.key(), c.opts.Recheck/5)
		return nil
	}
	blocking := 0
	for _, d := range c.dependentsOf(string(owner.uid)) {
		if d.obj.DeletionTimestamp == nil {
			c.enqueue(itemOf(d.m, d.obj))
		}
		for _, r := range d.obj.OwnerReferences {
			if r.UID == owner.uid && blocks(r) {
				blocking++
			}
		}
	}
	if blocking > 0 {
		// Deletion events of the dependents wake us; the recheck is a safety net.
		c.queue.AddAfter(owner.key(), c.opts.Recheck)
		return nil
	}
	if err := c.removeFinalizer(ctx, owner, obj, metav1.FinalizerDeleteDependents); err != nil {
		return err
	}
	c.recorder.Event(objRef(owner), corev1.EventTypeNormal, ReasonDependentsDeleted, messageDependentsDeleted)
	return nil
}

// jsonPatchOp is one RFC 6902 operation. Tests guard every removal by index so a concurrent change
// makes the patch fail (and the item retry) instead of removing the wrong entry.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

func (c *Controller) removeOwnerRefs(ctx context.Context, t target, obj *metav1.PartialObjectMetadata, drop []metav1.OwnerReference) error {
	var ops []jsonPatchOp
	ops = append(ops, jsonPatchOp{Op: "test", Path: "/metadata/uid", Value: string(obj.UID)})
	for idx := len(obj.OwnerReferences) - 1; idx >= 0; idx-- {
		r := obj.OwnerReferences[idx]
		if !slices.ContainsFunc(drop, func(x metav1.OwnerReference) bool { return x.UID == r.UID }) {
			continue
		}
		p := fmt.Sprintf("/metadata/ownerReferences/%d", idx)
		ops = append(ops, jsonPatchOp{Op: "test", Path: p + "/uid", Value: string(r.UID)}, jsonPatchOp{Op: "remove", Path: p})
	}
	if len(ops) == 1 {
		return nil
	}
	return c.patch(ctx, t, ops)
}

// unblockOwnerRefs sets blockOwnerDeletion to false on each of obj's owner references that had it,
// and says whether there were any.
func (c *Controller) unblockOwnerRefs(ctx context.Context, t target, obj *metav1.PartialObjectMetadata) (bool, error) {
	ops := []jsonPatchOp{{Op: "test", Path: "/metadata/uid", Value: string(obj.UID)}}
	for idx, r := range obj.OwnerReferences {
		if !blocks(r) {
			continue
		}
		p := fmt.Sprintf("/metadata/ownerReferences/%d", idx)
		ops = append(ops, jsonPatchOp{Op: "test", Path: p + "/uid", Value: string(r.UID)},
			jsonPatchOp{Op: "replace", Path: p + "/blockOwnerDeletion", Value: false})
	}
	if len(ops) == 1 {
		return false, nil
	}
	if err := c.patch(ctx, t, ops); err != nil {
		return false, err
	}
	c.enqueue(t.item)
	return true, nil
}

func (c *Controller) removeFinalizer(ctx context.Context, t target, obj *metav1.PartialObjectMetadata, fin string) error {
	idx := slices.Index(obj.Finalizers, fin)
	if idx < 0 {
		return nil
	}
	p := fmt.Sprintf("/metadata/finalizers/%d", idx)
	return c.patch(ctx, t, []jsonPatchOp{
		{Op: "test", Path: "/metadata/uid", Value: string(obj.UID)},
		{Op: "test", Path: p, Value: fin},
		{Op: "remove", Path: p},
	})
}

func (c *Controller) patch(ctx context.Context, t target, ops []jsonPatchOp) error {
	body, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	_, err = c.client(t).Patch(ctx, t.name, types.JSONPatchType, body, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("patch %s: %w", t.item, err)
	}
	return nil
}

func objRef(t target) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: t.apiVersion, Kind: t.kind, Namespace: t.namespace, Name: t.name, UID: t.uid}
}

func ownerList(refs []metav1.OwnerReference) string {
	s := ""
	for i, r := range refs {
		if i > 0 {
			s += ", "
		}
		s += r.Kind + " " + r.Name
	}
	return s
}
