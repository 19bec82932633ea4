package endpoints

import (
	"bytes"
	stderrors "errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/apiserver/admission"
	"github.com/skiffkube/skiff/apiserver/registry"
	"github.com/skiffkube/skiff/apiserver/warnings"
	"github.com/skiffkube/skiff/storage"
)

// maxUpdateRetries bounds the read-modify-write loop of unconditional
// updates and patches racing other writers.
const maxUpdateRetries = 16

var namespacesGR = schema.GroupResource{Resource: "namespaces"}

// decodeWrite reads the body of a POST or PUT, decodes it as the resource's
// kind with the request's field validation (warnings kept for the reply),
// prunes unknown fields, and says whether the request is a dry run.
func (h *Handler) decodeWrite(req *request) (runtime.Object, bool, error) {
	obj, _, dry, err := h.decodeWriteBody(req)
	return obj, dry, err
}

// decodeWriteBody is decodeWrite that also returns the body it read.
func (h *Handler) decodeWriteBody(req *request) (runtime.Object, []byte, bool, error) {
	body, err := readBody(req)
	if err != nil {
		return nil, nil, false, err
	}
	obj, dry, err := h.decodeBody(req, body)
	return obj, body, dry, err
}

func (h *Handler) decodeBody(req *request, body []byte) (runtime.Object, bool, error) {
	validation, err := req.fieldValidation()
	if err != nil {
		return nil, false, err
	}
	dry, err := req.dryRun()
	if err != nil {
		return nil, false, err
	}
	d, err := decodeObject(req.res, req.res.GVK(), contentType(req.r.Header.Get("Content-Type")), body, validation)
	if err != nil {
		return nil, false, err
	}
	req.warnings = append(req.warnings, d.warnings...)
	if err := h.pruneUnknown(req, d.obj, validation); err != nil {
		return nil, false, err
	}
	return d.obj, dry, nil
}

// decodeAgain decodes into a fresh object a body decodeBody has decoded
// and reported on before (its warnings are the request's already).
func (h *Handler) decodeAgain(req *request, body []byte) (runtime.Object, error) {
	warnings := req.warnings
	obj, _, err := h.decodeBody(req, body)
	req.warnings = warnings
	return obj, err
}

// create serves POST of a new object.
func (h *Handler) create(req *request) error {
	in, dry, err := h.decodeWrite(req)
	if err != nil {
		return err
	}
	obj, err := h.createObject(req, in, dry, nil)
	if err != nil {
		return err
	}
	return h.respond(req, http.StatusCreated, obj)
}

// pruneUnknown drops fields a custom resource's schema does not declare,
// applying the fieldValidation directive.
func (h *Handler) pruneUnknown(req *request, obj runtime.Object, validation string) error {
	p, ok := req.res.Strategy.(registry.UnknownFieldPruner)
	if !ok {
		return nil
	}
	unknown := p.PruneUnknown(obj)
	if len(unknown) == 0 || validation == fieldValidIgnore {
		return nil
	}
	var msgs []string
	for _, f := range unknown {
		msgs = append(msgs, fmt.Sprintf("unknown field %q", f))
	}
	if validation == fieldValidStrict {
		gvk := req.res.GVK()
		return errors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: strict decoding error: %s", gvk.Kind, gvk.Version, gvk.Kind, joinComma(msgs)))
	}
	req.warnings = append(req.warnings, msgs...)
	return nil
}

func joinComma(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(x)
	}
	return b.String()
}

// generateNameAttempts is how many names a create with generateName tries
// before it reports AlreadyExists, as in Kubernetes.
const generateNameAttempts = 8

// createObject fills system metadata, prepares, validates and stores a new
// object. applied, when set, is the apply configuration that created it.
func (h *Handler) createObject(req *request, obj runtime.Object, dry bool, applied runtime.Object) (runtime.Object, error) {
	res := req.res
	if applied != nil {
		fm, err := h.fms.get(res, subresourceForFields(req))
		if err != nil {
			return nil, errors.NewInternalError(err)
		}
		if obj, err = fm.Apply(obj, applied, req.query("fieldManager"), req.query("force") == "true"); err != nil {
			return nil, applyError(err)
		}
	}
	m := accessor(obj)
	if err := h.checkNamespace(req, m); err != nil {
		return nil, err
	}
	generated := m.GetName() == "" && m.GetGenerateName() != ""
	if generated {
		m.SetName(m.GetGenerateName() + utilrand.String(5))
	}
	m.SetUID(uuidNew())
	m.SetCreationTimestamp(wholeSecondsNow())
	m.SetResourceVersion("")
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	if applied == nil {
		m.SetManagedFields(nil)
	}
	if !res.Namespaced {
		m.SetNamespace("")
	}
	res.Strategy.PrepareForCreate(obj)
	// Namespace lifecycle comes first among the admission plugins, as in
	// Kubernetes: a missing namespace is a 404 whatever the others think.
	if res.Namespaced {
		if err := h.namespaceAcceptsContent(req, m.GetNamespace()); err != nil {
			return nil, err
		}
	}
	// managedFields record the create as Kubernetes records it: the
	// object as the client sent it and defaulting completed it, before
	// admission adds to it (a pod's service account, tolerations and
	// priority belong to no manager).
	if applied == nil {
		obj = h.trackCreate(req, obj)
		m = accessor(obj)
	}
	attrs := &admission.Attributes{Resource: res.GroupResource(), Namespace: m.GetNamespace(), Name: m.GetName(), Object: obj,
		Subresource: req.info.Subresource, DryRun: dry}
	if h.admission != nil {
		if err := h.admission.Mutate(req.ctx, attrs); err != nil {
			return nil, err
		}
	}
	if p, ok := res.Strategy.(registry.AdmittedPreparer); ok {
		p.PrepareAdmitted(obj)
	}
	if errs := res.Strategy.Validate(obj); len(errs) > 0 {
		return nil, errors.NewInvalid(res.GVK().GroupKind(), m.GetName(), errs)
	}
	// The kind's own warnings follow validation and precede validating
	// admission's, as in Kubernetes (its BeforeCreate).
	if kindWarns(req) {
		req.warnings = append(req.warnings, warnings.OnCreate(obj)...)
	}
	if res.WriteGuard != nil {
		if err := res.WriteGuard(req.ctx, obj, nil); err != nil {
			return nil, err
		}
	}
	undo := func() {}
	if h.admission != nil {
		attrs.Object = obj
		ar, err := h.admission.Validate(req.ctx, attrs)
		if err != nil {
			return nil, err
		}
		req.warnings = append(req.warnings, ar.Warnings...)
		if ar.Undo != nil {
			undo = ar.Undo
		}
	}
	if dry {
		// What the write would be refused for, it is refused for in a dry
		// run too: a requested cluster IP or node port that is taken.
		if d, ok := res.Lifecycle.(registry.DryRunner); ok {
			if _, err := d.DryRun().BeforeCreate(req.ctx, obj); err != nil {
				undo()
				return nil, err
			}
		}
		return obj, nil
	}
	alloc := registry.Allocation(noAllocation{})
	if res.Lifecycle != nil {
		a, err := res.Lifecycle.BeforeCreate(req.ctx, obj)
		if err != nil {
			undo()
			return nil, err
		}
		alloc = a
	}
	var kv *storage.KeyValue
	for attempt := 1; ; attempt++ {
		data, err := encodeStored(req.res, obj)
		if err != nil {
			alloc.Abort()
			undo()
			return nil, errors.NewInternalError(err)
		}
		kv, err = h.store.Create(req.ctx, res.Key(m.GetNamespace(), m.GetName()), data, res.TTL, h.storeOptions(res, obj, data)...)
		if err == nil {
			break
		}
		// A generated name that is taken gets another, as Kubernetes
		// retries generateName (RetryGenerateName, GA in 1.32): with
		// five random characters, a ReplicaSet of 10,000 pods meets a
		// few collisions.
		if generated && stderrors.Is(err, storage.ErrKeyExists) && attempt < generateNameAttempts {
			m.SetName(m.GetGenerateName() + utilrand.String(5))
			continue
		}
		alloc.Abort()
		undo()
		return nil, storeError(err, res.GroupResource(), m.GetName())
	}
	alloc.Commit()
	m.SetResourceVersion(strconv.FormatInt(kv.ModRevision, 10))
	return obj, nil
}

// trackFields records the write in managedFields; with applied set it is a
// server-side apply of that configuration onto live.
func (h *Handler) trackFields(req *request, live, obj, applied runtime.Object) (runtime.Object, error) {
	fm, err := h.fms.get(req.res, subresourceForFields(req))
	if err != nil {
		return obj, nil // tracking is best effort; the write itself is valid
	}
	if applied != nil {
		out, err := fm.Apply(live, applied, req.query("fieldManager"), req.query("force") == "true")
		if err != nil {
			var se *errors.StatusError
			if stderrors.As(err, &se) {
				return nil, se
			}
			return nil, errors.NewBadRequest(err.Error())
		}
		return out, nil
	}
	return trackUpdate(fm, h.fms.getFast(req.res, subresourceForFields(req)), live, obj, managerName(req)), nil
}

// trackCreate records the create of obj in its managedFields, through the
// cache of creates' fields for the built-in kinds (see createFieldsCache).
// Of a kind with a status subresource the status is left out, as
// Kubernetes' reset fields leave it out of the main endpoint's writes:
// nobody owns the phase and QoS class the server gives a new pod, nor the
// status a node is registered with.
func (h *Handler) trackCreate(req *request, obj runtime.Object) runtime.Object {
	sub := subresourceForFields(req)
	exact, err := h.fms.get(req.res, sub)
	if err != nil {
		return obj // tracking is best effort; the write itself is valid
	}
	tracked := obj
	if req.res.Subresources.Status {
		tracked = registry.WithoutStatus(obj)
	}
	var out runtime.Object
	if fast := h.fms.getFast(req.res, sub); fast == nil {
		out = trackUpdate(exact, nil, newObject(req.res), tracked, managerName(req))
	} else {
		out = h.createFields.track(exact, fast, req.res.GVK(), sub, managerName(req), tracked, func() runtime.Object { return newObject(req.res) })
	}
	if tracked == obj {
		return out
	}
	accessor(obj).SetManagedFields(accessor(out).GetManagedFields())
	return obj
}

// trackUpdate records a non-apply write of obj over live by manager with
// the field manager fast, which skips schema validation, and when that
// fails (or fast is nil) with the validating exact, so the outcome is
// always exact's.
func trackUpdate(exact, fast *managedfields.FieldManager, live, obj runtime.Object, manager string) runtime.Object {
	if fast != nil {
		if pl, po, ok := pruneUnchanged(live, obj); ok {
			// The copies share obj's values: tracking changes only their
			// managedFields, which are carried over to obj.
			if out, err := fast.Update(pl, po, manager); err == nil {
				accessor(obj).SetManagedFields(accessor(out).GetManagedFields())
				return obj
			}
		} else {
			// Of obj, Update changes only its managedFields (it strips
			// them, then sets the new ones; the object it returns is obj)
			// whether it fails or not: the validating fallback gets them
			// back, which spares a copy of every object created.
			saved := accessor(obj).GetManagedFields()
			if out, err := fast.Update(live, obj, manager); err == nil {
				return out
			}
			accessor(obj).SetManagedFields(saved)
		}
	}
	return exact.UpdateNoErrors(live, obj, manager)
}

// pruneUnchanged returns shallow copies of live and obj (pointers to
// structs of one type, as built-in kinds are) in which each top-level
// field other than the type and object metadata that is the same Go value
// in both (reflect.DeepEqual, so the same serialized form) is zeroed in
// both; ok is false when no field is. Comparing the copies finds exactly
// the changes comparing the objects finds, and structured-merge-diff's
// comparison, most of what tracking a write costs, skips what did not
// change: a status update compares the status, not the spec.
func pruneUnchanged(live, obj runtime.Object) (prunedLive, prunedObj runtime.Object, ok bool) {
	lv, ov := reflect.ValueOf(live), reflect.ValueOf(obj)
	if lv.Type() != ov.Type() || lv.Kind() != reflect.Pointer || lv.IsNil() || ov.IsNil() || lv.Elem().Kind() != reflect.Struct {
		return nil, nil, false
	}
	lv, ov = lv.Elem(), ov.Elem()
	var same []int
	for i := range lv.NumField() {
		f := lv.Type().Field(i)
		if f.Anonymous || !f.IsExported() {
			continue // TypeMeta and ObjectMeta are embedded
		}
		// Compared through pointers to the fields, which DeepEqual follows:
		// Interface() of a struct field copies it (a whole PodSpec) to
		// the heap.
		if reflect.DeepEqual(lv.Field(i).Addr().Interface(), ov.Field(i).Addr().Interface()) {
			same = append(same, i)
		}
	}
	if len(same) == 0 {
		return nil, nil, false
	}
	pl, po := reflect.New(lv.Type()), reflect.New(ov.Type())
	pl.Elem().Set(lv)
	po.Elem().Set(ov)
	for _, i := range same {
		pl.Elem().Field(i).SetZero()
		po.Elem().Field(i).SetZero()
	}
	prunedLive, okL := pl.Interface().(runtime.Object)
	prunedObj, okO := po.Interface().(runtime.Object)
	return prunedLive, prunedObj, okL && okO
}

// kindWarns says whether the request's writes get the kind's warnings:
// those of the main resource and of its scale subresource, which Kubernetes
// writes through the main strategy; its status strategies give none.
func kindWarns(req *request) bool {
	return req.info.Subresource == "" || req.info.Subresource == "scale"
}

func subresourceForFields(req *request) string {
	if req.info.Subresource == "status" {
		return "status"
	}
	return ""
}

// checkNamespace reconciles the object's namespace with the URL's.
func (h *Handler) checkNamespace(req *request, m metav1.Object) error {
	if !req.res.Namespaced {
		return nil
	}
	if m.GetNamespace() == "" {
		m.SetNamespace(req.info.Namespace)
	}
	if req.info.Namespace == "" {
		return errors.NewBadRequest("the namespace of the object is required")
	}
	if m.GetNamespace() != req.info.Namespace {
		return errors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// namespaceAcceptsContent is the namespace lifecycle admission: objects may
// be created only in namespaces that exist and are not terminating.
func (h *Handler) namespaceAcceptsContent(req *request, ns string) error {
	key := "/registry/namespaces/" + ns
	// An active namespace in the store's cache is enough, as Kubernetes'
	// plugin trusts its informer; a miss or a terminating namespace there is
	// read again from the database (the cache may be a moment behind a
	// namespace just created or restored), so only those cost a query.
	// The cache hands out the same *KeyValue for as long as the namespace
	// is unchanged, so the state last seen active is remembered by that
	// pointer and not decoded again on every create.
	if cg, ok := h.store.(storage.CachedGetter); ok {
		if kv, found, ok := cg.GetCached(key); ok && found {
			if seen, ok := h.activeNamespaces.Load(ns); ok && seen.(*storage.KeyValue) == kv {
				return nil
			}
			var p metav1.PartialObjectMetadata
			if err := jsonUnmarshal(kv.Value, &p); err == nil && p.DeletionTimestamp == nil {
				h.activeNamespaces.Store(ns, kv)
				return nil
			}
		}
		h.activeNamespaces.Delete(ns) // gone or terminating: forget it
	}
	kv, err := h.store.Get(req.ctx, key, 0)
	if err != nil {
		if stderrors.Is(err, storage.ErrNotFound) {
			return errors.NewNotFound(namespacesGR, ns)
		}
		return storeError(err, namespacesGR, ns)
	}
	var p metav1.PartialObjectMetadata
	if err := jsonUnmarshal(kv.Value, &p); err != nil {
		return errors.NewInternalError(err)
	}
	if p.DeletionTimestamp != nil {
		// With Kubernetes' cause, which controllers look for to stop
		// retrying (apierrors.HasStatusCause(err, NamespaceTerminatingCause)).
		err := errors.NewForbidden(req.res.GroupResource(), "", fmt.Errorf("unable to create new content in namespace %s because it is being terminated", ns))
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type: corev1.NamespaceTerminatingCause, Message: fmt.Sprintf("namespace %s is being terminated", ns), Field: "metadata.namespace"})
		return err
	}
	return nil
}

// mutateFunc computes the new object from the current one. current is the
// update loop's own copy of the stored object, which the loop goes on
// reading as the old object: a mutateFunc that builds the new object by
// changing current must change a copy of it (current.DeepCopyObject()).
// Those that only read it (a PUT's, a patch's) spare every write that copy.
type mutateFunc func(current runtime.Object) (runtime.Object, error)

// updateResult is the outcome of guaranteedUpdate.
type updateResult struct {
	obj     runtime.Object
	created bool
}

// guaranteedUpdate reads, mutates, prepares, validates and compare-and-swaps
// one object, retrying when another writer got there first unless the new
// object named the resourceVersion it expects (then 409). A nil current
// (not found) is passed to mutate only when createIfMissing.
func (h *Handler) guaranteedUpdate(req *request, st registry.Strategy, name string, dry bool, mutate mutateFunc, createIfMissing func() (runtime.Object, runtime.Object, error)) (*updateResult, error) {
	// The first try reads the object from the store's cache, as Kubernetes'
	// guaranteedUpdate reads its watch cache: the write is a compare-and-
	// swap, so a stale read costs a retry, never a lost update. A refusal
	// decided on a cached read (a conflict with the client's
	// resourceVersion, a validation against a stale old object) is decided
	// again on a fresh read, and so are no-ops; dry runs read fresh.
	var cached bool
	out, err := h.updateLoop(req, st, name, dry, mutate, createIfMissing, !dry, &cached)
	if err != nil && cached {
		out, err = h.updateLoop(req, st, name, dry, mutate, createIfMissing, false, &cached)
	}
	return out, err
}

// updateLoop is guaranteedUpdate's read-modify-CAS loop; only its first read
// may come from the cache (cacheFirst). *cached reports whether the attempt
// that returned read from the cache.
func (h *Handler) updateLoop(req *request, st registry.Strategy, name string, dry bool, mutate mutateFunc, createIfMissing func() (runtime.Object, runtime.Object, error), cacheFirst bool, cached *bool) (out *updateResult, err error) {
	var kindWarnings, admitWarnings []string
	defer func() {
		if out != nil && out.created {
			return // createObject gave the create's warnings
		}
		// The kind's warnings of the last attempt that got past
		// validation stand, as in Kubernetes, even when admission then
		// refuses the write.
		req.warnings = append(req.warnings, kindWarnings...)
		if err == nil {
			req.warnings = append(req.warnings, admitWarnings...)
		}
	}()
	res := req.res
	ns := req.info.Namespace
	if !res.Namespaced {
		ns = ""
	}
	key := res.Key(ns, name)
	for attempt := 0; ; attempt++ {
		old, kv, fromCache, err := h.loadMaybeCached(req, ns, name, cacheFirst && attempt == 0)
		*cached = fromCache
		if err != nil {
			if errors.IsNotFound(err) && createIfMissing != nil {
				obj, applied, err := createIfMissing()
				if err != nil {
					return nil, err
				}
				out, err := h.createObject(req, obj, dry, applied)
				if err != nil {
					if errors.IsAlreadyExists(err) && attempt < maxUpdateRetries {
						continue
					}
					return nil, err
				}
				return &updateResult{obj: out, created: true}, nil
			}
			return nil, err
		}
		obj, err := mutate(old)
		if err != nil {
			return nil, err
		}
		m, om := accessor(obj), accessor(old)
		currentRV := strconv.FormatInt(kv.ModRevision, 10)
		preconditioned := m.GetResourceVersion() != ""
		if preconditioned && m.GetResourceVersion() != currentRV {
			if fromCache {
				continue
			}
			return nil, errors.NewConflict(res.GroupResource(), name, stderrors.New(registryOptimisticLock))
		}
		if m.GetName() != name {
			return nil, errors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), name))
		}
		if err := h.checkNamespace(req, m); err != nil {
			return nil, err
		}
		// System fields clients cannot change.
		if m.GetUID() == "" {
			m.SetUID(om.GetUID())
		}
		m.SetCreationTimestamp(om.GetCreationTimestamp())
		m.SetDeletionTimestamp(om.GetDeletionTimestamp())
		m.SetDeletionGracePeriodSeconds(om.GetDeletionGracePeriodSeconds())
		m.SetResourceVersion(currentRV)
		st.PrepareForUpdate(obj, old)
		// A write leaving no finalizer completes a deletion that has no grace
		// period left; a pod in its grace period stays until its kubelet
		// deletes it with grace 0, whatever is written meanwhile (its final
		// status, a label), as Kubernetes' store (shouldDeleteDuringUpdate).
		finishing := om.GetDeletionTimestamp() != nil && len(m.GetFinalizers()) == 0 && !namespaceHoldsFinalizers(obj) &&
			ptr.Deref(om.GetDeletionGracePeriodSeconds(), 0) == 0
		if res.Lifecycle != nil && !finishing {
			// What clients may omit (a Service's cluster IP) is carried
			// over before validation compares with the old object.
			res.Lifecycle.PrepareUpdate(obj, old)
		}
		kindWarnings = nil // an earlier attempt's are about another old object
		if errs := st.ValidateUpdate(obj, old); len(errs) > 0 {
			return nil, errors.NewInvalid(res.GVK().GroupKind(), name, errs)
		}
		if kindWarns(req) {
			kindWarnings = warnings.OnUpdate(obj, old)
		}
		if res.WriteGuard != nil && !finishing {
			if err := res.WriteGuard(req.ctx, obj, old); err != nil {
				return nil, err
			}
		}
		// unadmit takes back what admission charged (quota for a claim's
		// larger request) when this attempt does not store the object.
		unadmit := func() {}
		if h.admission != nil && !finishing {
			ar, err := h.admission.ValidateUpdate(req.ctx, &admission.Attributes{Resource: res.GroupResource(), Namespace: ns,
				Name: name, Object: obj, Subresource: req.info.Subresource, DryRun: dry}, old)
			if err != nil {
				return nil, err
			}
			admitWarnings = ar.Warnings // this attempt's; an earlier one's are stale
			if ar.Undo != nil {
				unadmit = ar.Undo
			}
		}
		if _, skip := st.(untracked); !skip && (req.info.Verb != "patch" || contentType(req.r.Header.Get("Content-Type")) != mediaApplyYAML) {
			obj, err = h.trackFields(req, old, obj, nil)
			if err != nil {
				unadmit()
				return nil, err
			}
			m = accessor(obj)
		}
		// Only a valid, real write allocates; Commit releases what the old
		// object gave up once the write is stored, Abort gives back what
		// was taken when it is not.
		alloc := registry.Allocation(noAllocation{})
		lifecycle := res.Lifecycle
		if dry {
			// A dry run checks what the update would take, taking nothing.
			lifecycle = nil
			if d, ok := res.Lifecycle.(registry.DryRunner); ok {
				lifecycle = d.DryRun()
			}
		}
		if lifecycle != nil && !finishing {
			a, err := lifecycle.BeforeUpdate(req.ctx, obj, old)
			if err != nil {
				unadmit()
				return nil, err
			}
			alloc = a
		}
		newData, err := encodeStored(req.res, obj)
		if err != nil {
			alloc.Abort()
			unadmit()
			return nil, errors.NewInternalError(err)
		}
		// A write that would store the bytes already stored is a no-op,
		// decided as Kubernetes' GuaranteedUpdate decides it: by comparing
		// with the stored value, not with a re-encoding of the old object.
		if bytes.Equal(newData, kv.Value) {
			alloc.Abort()
			unadmit()
			if fromCache {
				continue
			}
			return &updateResult{obj: old}, nil // a no-op write changes nothing, not even resourceVersion
		}
		if dry {
			return &updateResult{obj: obj}, nil
		}
		if finishing {
			// The last finalizer is gone: the object's deletion completes now.
			_, rev, err := h.store.Delete(req.ctx, key, kv.ModRevision)
			if err != nil {
				if stderrors.Is(err, storage.ErrConflict) && (!preconditioned || fromCache) && attempt < maxUpdateRetries {
					continue
				}
				return nil, storeError(err, res.GroupResource(), name)
			}
			m.SetResourceVersion(strconv.FormatInt(rev, 10))
			if res.Lifecycle != nil {
				res.Lifecycle.AfterDelete(req.ctx, obj)
			}
			return &updateResult{obj: obj}, nil
		}
		nkv, err := h.store.Update(req.ctx, key, newData, kv.ModRevision, res.TTL, h.storeOptions(res, obj, newData)...)
		if err != nil {
			alloc.Abort()
			unadmit()
			if stderrors.Is(err, storage.ErrConflict) && (!preconditioned || fromCache) && attempt < maxUpdateRetries {
				continue
			}
			return nil, storeError(err, res.GroupResource(), name)
		}
		alloc.Commit()
		m.SetResourceVersion(strconv.FormatInt(nkv.ModRevision, 10))
		return &updateResult{obj: obj}, nil
	}
}

// update serves PUT of an object (or of its status).
func (h *Handler) update(req *request, st registry.Strategy) error {
	obj, body, dry, err := h.decodeWriteBody(req)
	if err != nil {
		return err
	}
	m := accessor(obj)
	if m.GetName() != req.info.Name {
		return errors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), req.info.Name))
	}
	// The first attempt writes the decoded object itself; an attempt
	// changes the object it writes, so a retry decodes the body again
	// rather than every update copying the object in case of one.
	fresh := obj
	// The kinds that allow it are created by a PUT when missing (never
	// through a subresource), which takes leave to create, as Kubernetes'
	// update handler asks for it.
	var createOnUpdate func() (runtime.Object, runtime.Object, error)
	if req.res.CreateOnUpdate && req.info.Subresource == "" {
		createOnUpdate = func() (runtime.Object, runtime.Object, error) {
			if err := h.authorizeVerb(req, "create"); err != nil {
				return nil, nil, err
			}
			if fresh != nil {
				o := fresh
				fresh = nil
				return o, nil, nil
			}
			o, err := h.decodeAgain(req, body)
			return o, nil, err
		}
	}
	out, err := h.guaranteedUpdate(req, st, req.info.Name, dry, func(runtime.Object) (runtime.Object, error) {
		if m.GetResourceVersion() == "" && !unconditionalAllowed(req.res) {
			// Decided once the object is found, as Kubernetes' store does.
			return nil, errors.NewInvalid(schema.GroupKind{Group: req.res.Group, Kind: req.res.Name}, req.info.Name, field.ErrorList{
				field.Invalid(field.NewPath("metadata", "resourceVersion"), uint64(0), "must be specified for an update")})
		}
		if fresh != nil {
			o := fresh
			fresh = nil
			return o, nil
		}
		return h.decodeAgain(req, body)
	}, createOnUpdate)
	if err != nil {
		return err
	}
	if out.created {
		return h.respond(req, http.StatusCreated, out.obj)
	}
	return h.respond(req, http.StatusOK, out.obj)
}

// unconditionalAllowed says whether a PUT of the resource (or of its
// status) may leave out the resourceVersion, to overwrite whatever is
// stored: as Kubernetes, yes for built-in kinds, no for custom resources and
// CRDs, whose strategies disallow it.
func unconditionalAllowed(res *registry.Resource) bool {
	u, ok := res.Strategy.(registry.ConditionalUpdater)
	return !ok || u.AllowUnconditionalUpdate()
}

// namespaceHoldsFinalizers: a terminating namespace stays until its
// spec.finalizers are empty too.
func namespaceHoldsFinalizers(obj runtime.Object) bool {
	return namespaceSpecFinalizers(obj) > 0
}

func uuidNew() typesUID { return typesUID(uuid.NewString()) }

// noAllocation is the Allocation of resources without a Lifecycle.
type noAllocation struct{}

func (noAllocation) Commit() {}
func (noAllocation) Abort()  {}
