package registry

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Strategy is what the generic handler asks of a resource on every write.
// It is stateless; one value serves every request.
type Strategy interface {
	// PrepareForCreate clears what a client may not set on create (status
	// where a status subresource exists), sets generation and applies
	// defaults.
	PrepareForCreate(obj runtime.Object)
	// PrepareForUpdate carries over from old what this endpoint may not
	// change (status on the main endpoint, everything but status on the
	// status endpoint) and bumps generation when the spec changed.
	PrepareForUpdate(obj, old runtime.Object)
	// Validate checks a new object.
	Validate(obj runtime.Object) field.ErrorList
	// ValidateUpdate checks an updated object against its previous state.
	ValidateUpdate(obj, old runtime.Object) field.ErrorList
}

// StatusStrategist is implemented by strategies of resources with a status
// subresource; it returns the strategy the status endpoint uses.
type StatusStrategist interface {
	StatusStrategy() Strategy
}

// AdmittedPreparer is implemented by strategies that complete a new object
// from what mutating admission left in it, as Kubernetes' PrepareForCreate
// does, which runs after admission: a pod's QoS class counts the resources
// a LimitRange defaulted.
type AdmittedPreparer interface {
	PrepareAdmitted(obj runtime.Object)
}

// Hooks are the per-kind defaulting and validation functions that live in
// their own packages (apiserver/defaulting, apiserver/validation). Each may be
// nil; each must ignore kinds it does not know.
type Hooks struct {
	Default        func(obj runtime.Object)
	Validate       func(obj runtime.Object) field.ErrorList
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
	// ValidateStatusUpdate checks an update through the status
	// subresource, whose everything but status the status strategy has
	// already set to the stored object's; nil runs ValidateUpdate.
	ValidateStatusUpdate func(obj, old runtime.Object) field.ErrorList
}

// DefaultStrategy is the strategy most resources use.
type DefaultStrategy struct {
	// Namespaced decides whether metadata.namespace is required.
	Namespaced bool
	// NameFunc validates metadata.name; nil means a DNS-1123 subdomain.
	NameFunc apivalidation.ValidateNameFunc
	// HasStatus: the main endpoint ignores status (it has a subresource).
	HasStatus bool
	// CreateWithStatus keeps the status a create carries, where the main
	// endpoint otherwise ignores it: Kubernetes lets nodes alone be
	// created so, as a kubelet registers its node with its capacity and
	// conditions.
	CreateWithStatus bool
	// Generation: metadata.generation starts at 1 and grows on spec changes.
	Generation bool
	// RequireResourceVersion: an update must name the resourceVersion it
	// expects, as Kubernetes' custom resources and CRDs require
	// (AllowUnconditionalUpdate false); built-in kinds take one without.
	RequireResourceVersion bool
	// AnnotationsMoveGeneration: annotation changes move the generation as
	// spec changes do. Kubernetes does so for Deployments, whose
	// annotations their controller copies to their ReplicaSets.
	AnnotationsMoveGeneration bool
	// StatusSetsAnnotations: a status write also sets the annotations.
	// Kubernetes' Deployment status strategy keeps only the spec and
	// labels of the stored object, and the Deployment controller writes
	// the revision annotation through /status, so that it does not move
	// the generation (AnnotationsMoveGeneration). skiff's status writes
	// otherwise keep all metadata of the stored object.
	StatusSetsAnnotations bool
	// Hooks adds per-kind defaulting and validation.
	Hooks Hooks
	// Extra runs after the hooks: resource-specific preparation (pods start
	// Pending, namespaces get their finalizer) without a new strategy type.
	OnCreate func(obj runtime.Object)
	// OnAdmitted completes a new object after mutating admission.
	OnAdmitted func(obj runtime.Object)
	// OnUpdate is OnCreate's counterpart for updates of the main resource
	// (a DaemonSet's template generation follows its template).
	OnUpdate func(obj, old runtime.Object)
}

// ConditionalUpdater is implemented by strategies whose updates may have to
// name a resourceVersion (Kubernetes' AllowUnconditionalUpdate).
type ConditionalUpdater interface {
	AllowUnconditionalUpdate() bool
}

// AllowUnconditionalUpdate implements ConditionalUpdater.
func (s *DefaultStrategy) AllowUnconditionalUpdate() bool { return !s.RequireResourceVersion }

// PrepareAdmitted implements AdmittedPreparer.
func (s *DefaultStrategy) PrepareAdmitted(obj runtime.Object) {
	if s.OnAdmitted != nil {
		s.OnAdmitted(obj)
	}
}

// PrepareForCreate implements Strategy.
func (s *DefaultStrategy) PrepareForCreate(obj runtime.Object) {
	if s.HasStatus && !s.CreateWithStatus {
		resetStatus(obj)
	}
	if m, err := meta.Accessor(obj); err == nil {
		if s.Generation {
			m.SetGeneration(1)
		} else {
			m.SetGeneration(0)
		}
	}
	if s.Hooks.Default != nil {
		s.Hooks.Default(obj)
	}
	if s.OnCreate != nil {
		s.OnCreate(obj)
	}
}

// PrepareForUpdate implements Strategy.
func (s *DefaultStrategy) PrepareForUpdate(obj, old runtime.Object) {
	if s.HasStatus {
		copyStatus(obj, old)
	}
	// Defaults first, as Kubernetes defaults a request when decoding it:
	// a spec sent without the fields the server fills in is not a new spec.
	if s.Hooks.Default != nil {
		s.Hooks.Default(obj)
	}
	m, err1 := meta.Accessor(obj)
	om, err2 := meta.Accessor(old)
	if err1 == nil && err2 == nil {
		m.SetGeneration(om.GetGeneration())
		if s.Generation && (!specEqual(obj, old, s.HasStatus) ||
			s.AnnotationsMoveGeneration && !equality.Semantic.DeepEqual(m.GetAnnotations(), om.GetAnnotations())) {
			m.SetGeneration(om.GetGeneration() + 1)
		}
	}
	if s.OnUpdate != nil {
		s.OnUpdate(obj, old)
	}
}

// Validate implements Strategy.
func (s *DefaultStrategy) Validate(obj runtime.Object) field.ErrorList {
	errs := s.validateMeta(obj)
	if s.Hooks.Validate != nil {
		errs = append(errs, s.Hooks.Validate(obj)...)
	}
	return dedupe(errs)
}

// dedupe drops repeated errors: the generic metadata rules and a kind's own
// rules may report the same problem.
func dedupe(errs field.ErrorList) field.ErrorList {
	if len(errs) < 2 {
		return errs
	}
	seen := map[string]bool{}
	out := errs[:0:0]
	for _, e := range errs {
		k := e.Error()
		if !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	return out
}

// ValidateUpdate implements Strategy.
func (s *DefaultStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return s.validateUpdateWith(obj, old, s.Hooks.ValidateUpdate)
}

// validateUpdateWith checks an update's metadata and then runs hook (if
// any), the kind's own rules.
func (s *DefaultStrategy) validateUpdateWith(obj, old runtime.Object, hook func(obj, old runtime.Object) field.ErrorList) field.ErrorList {
	errs := s.validateMeta(obj)
	m, err1 := meta.Accessor(obj)
	om, err2 := meta.Accessor(old)
	if err1 == nil && err2 == nil {
		errs = append(errs, apivalidation.ValidateObjectMetaAccessorUpdate(m, om, field.NewPath("metadata"))...)
	}
	if hook != nil {
		errs = append(errs, hook(obj, old)...)
	}
	return dedupe(errs)
}

func (s *DefaultStrategy) validateMeta(obj runtime.Object) field.ErrorList {
	m, err := meta.Accessor(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	nameFn := s.NameFunc
	if nameFn == nil {
		nameFn = apivalidation.NameIsDNSSubdomain
	}
	return apivalidation.ValidateObjectMetaAccessor(m, s.Namespaced, nameFn, field.NewPath("metadata"))
}

// StatusStrategy implements StatusStrategist.
func (s *DefaultStrategy) StatusStrategy() Strategy { return &statusStrategy{main: s} }

// statusStrategy serves the status subresource: only status may change.
type statusStrategy struct{ main *DefaultStrategy }

func (s *statusStrategy) PrepareForCreate(obj runtime.Object) { s.main.PrepareForCreate(obj) }

// PrepareForUpdate keeps everything of old but its status, which is
// defaulted as the status of any write is (a node's allocatable from its
// capacity, a pod's podIPs from its podIP).
func (s *statusStrategy) PrepareForUpdate(obj, old runtime.Object) {
	m, err1 := meta.Accessor(obj)
	_, err2 := meta.Accessor(old)
	if err1 != nil || err2 != nil {
		return
	}
	rv, annotations := m.GetResourceVersion(), m.GetAnnotations()
	copyAllButStatus(obj, old)
	m.SetResourceVersion(rv)
	if s.main.StatusSetsAnnotations {
		m.SetAnnotations(annotations)
	}
	if s.main.Hooks.Default != nil {
		s.main.Hooks.Default(obj)
	}
}

func (s *statusStrategy) Validate(obj runtime.Object) field.ErrorList { return s.main.Validate(obj) }

// ValidateUpdate checks the metadata as any update does (PrepareForUpdate
// kept the stored one) and the kind's rules for a status update.
func (s *statusStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	if s.main.Hooks.ValidateStatusUpdate != nil {
		return s.main.validateUpdateWith(obj, old, s.main.Hooks.ValidateStatusUpdate)
	}
	return s.main.ValidateUpdate(obj, old)
}

// resetStatus zeroes the Status field (typed) or drops "status" (unstructured).
func resetStatus(obj runtime.Object) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		delete(u.Object, "status")
		return
	}
	if f := structField(obj, "Status"); f.IsValid() && f.CanSet() {
		f.Set(reflect.Zero(f.Type()))
	}
}

// WithoutStatus returns obj itself when it has no status (or an empty
// one), else a shallow copy of it (a pointer to a struct, as built-in kinds
// are) without its status. An unstructured object is returned as it is:
// its strategy removed its status on create.
func WithoutStatus(obj runtime.Object) runtime.Object {
	if st := structField(obj, "Status"); !st.IsValid() || st.IsZero() {
		return obj
	}
	v := reflect.ValueOf(obj).Elem()
	cp := reflect.New(v.Type())
	cp.Elem().Set(v)
	cp.Elem().FieldByName("Status").SetZero()
	return cp.Interface().(runtime.Object)
}

// copyStatus sets obj's status to old's.
func copyStatus(obj, old runtime.Object) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		ou, ok := old.(*unstructured.Unstructured)
		if !ok {
			return
		}
		if st, ok := ou.Object["status"]; ok {
			u.Object["status"] = runtime.DeepCopyJSONValue(st)
		} else {
			delete(u.Object, "status")
		}
		return
	}
	dst, src := structField(obj, "Status"), structField(old, "Status")
	if dst.IsValid() && src.IsValid() && dst.CanSet() {
		dst.Set(src)
	}
}

// copyAllButStatus makes obj a copy of old whose status is obj's.
func copyAllButStatus(obj, old runtime.Object) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		ou, ok := old.(*unstructured.Unstructured)
		if !ok {
			return
		}
		st, has := u.Object["status"]
		u.Object = runtime.DeepCopyJSON(ou.Object)
		if has {
			u.Object["status"] = st
		} else {
			delete(u.Object, "status")
		}
		return
	}
	dst := reflect.ValueOf(obj)
	src := reflect.ValueOf(old.DeepCopyObject())
	if dst.Kind() != reflect.Pointer || src.Kind() != reflect.Pointer || dst.Type() != src.Type() {
		return
	}
	status := structField(obj, "Status")
	var saved reflect.Value
	if status.IsValid() {
		saved = reflect.New(status.Type()).Elem()
		saved.Set(status)
	}
	dst.Elem().Set(src.Elem())
	if saved.IsValid() {
		structField(obj, "Status").Set(saved)
	}
}

// specEqual compares everything but type, metadata and status. A custom
// resource's status counts when it has no status subresource (hasStatus
// false), as Kubernetes' custom resource strategy compares all but the
// metadata: without the subresource the status is written as the spec is.
func specEqual(a, b runtime.Object, hasStatus bool) bool {
	if ua, ok := a.(*unstructured.Unstructured); ok {
		ub, ok := b.(*unstructured.Unstructured)
		if !ok {
			return false
		}
		strip := func(m map[string]any) map[string]any {
			out := make(map[string]any, len(m))
			for k, v := range m {
				switch {
				case k == "metadata", k == "apiVersion", k == "kind", k == "status" && hasStatus:
				default:
					out[k] = v
				}
			}
			return out
		}
		return equality.Semantic.DeepEqual(strip(ua.Object), strip(ub.Object))
	}
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Kind() != reflect.Pointer || vb.Kind() != reflect.Pointer || va.Type() != vb.Type() {
		return false
	}
	ea, eb := va.Elem(), vb.Elem()
	if ea.Kind() != reflect.Struct {
		return false
	}
	t := ea.Type()
	for i := 0; i < t.NumField(); i++ {
		switch t.Field(i).Name {
		case "TypeMeta", "ObjectMeta", "Status":
			continue
		}
		if !equality.Semantic.DeepEqual(ea.Field(i).Interface(), eb.Field(i).Interface()) {
			return false
		}
	}
	return true
}

func structField(obj runtime.Object, name string) reflect.Value {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return reflect.Value{}
	}
	e := v.Elem()
	if e.Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return e.FieldByName(name)
}

// UnknownFieldPruner is implemented by strategies of schema-described
// resources (custom resources): PruneUnknown drops fields the schema does
// not declare and returns their paths ("spec.foo").
type UnknownFieldPruner interface {
	PruneUnknown(obj runtime.Object) []string
}
