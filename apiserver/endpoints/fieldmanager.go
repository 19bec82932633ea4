package endpoints

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/skiffkube/skiff/apiserver/registry"
)

// fieldManagers builds and caches one structured-merge-diff field manager
// per kind and subresource: it tracks managedFields on every write and does
// server-side apply.
type fieldManagers struct {
	mu      sync.Mutex
	byKey   map[string]*managedfields.FieldManager
	builtin managedfields.TypeConverter
	deduced managedfields.TypeConverter
	// fast holds the built-in kinds' field managers whose type converter
	// skips schema validation (see unvalidatedConverter).
	fast                map[string]*managedfields.FieldManager
	builtinNoValidation managedfields.TypeConverter
}

func newFieldManagers() *fieldManagers {
	builtin := applyconfigurations.NewTypeConverter(Scheme)
	return &fieldManagers{
		byKey:               map[string]*managedfields.FieldManager{},
		builtin:             builtin,
		deduced:             managedfields.NewDeducedTypeConverter(),
		fast:                map[string]*managedfields.FieldManager{},
		builtinNoValidation: &unvalidatedConverter{exact: builtin},
	}
}

// getFast is the field manager of a built-in kind that does not validate
// objects against the schema; nil for other kinds. Only non-apply writes
// (creates and updates) use it, always with get's manager as the fallback
// for any error (see trackUpdate).
func (f *fieldManagers) getFast(res *registry.Resource, subresource string) *managedfields.FieldManager {
	if res.Unstructured() || !builtinSchema[res.Group] {
		return nil
	}
	key := res.GVK().String() + "/" + subresource
	f.mu.Lock()
	defer f.mu.Unlock()
	if fm, ok := f.fast[key]; ok {
		return fm
	}
	fm, err := managedfields.NewDefaultFieldManager(f.builtinNoValidation, unsafeConvertor, Scheme, Scheme, res.GVK(), res.GroupVersion(), subresource, nil)
	if err != nil {
		fm = nil
	}
	f.fast[key] = fm
	return fm
}

// unsafeConvertor is the field managers' object convertor, as Kubernetes'
// API installer gives them: the objects it converts are the request's
// own (the decoded body, a private copy of the stored object) and are only
// read, so converting to the version they already are in need not copy
// them, which the scheme's ConvertToVersion does (two deep copies of every
// written object).
var unsafeConvertor = runtime.UnsafeObjectConvertor(Scheme)

func (f *fieldManagers) get(res *registry.Resource, subresource string) (*managedfields.FieldManager, error) {
	key := res.GVK().String() + "/" + subresource
	f.mu.Lock()
	defer f.mu.Unlock()
	if fm, ok := f.byKey[key]; ok {
		return fm, nil
	}
	var (
		fm  *managedfields.FieldManager
		err error
	)
	if res.Unstructured() {
		conv := unstructuredConvertor{}
		fm, err = managedfields.NewDefaultCRDFieldManager(f.deduced, conv, conv, conv, res.GVK(), res.GroupVersion(), subresource, nil)
	} else if !builtinSchema[res.Group] {
		// Typed kinds outside k8s.io/api (CRDs themselves) have no schema
		// in client-go's parser: their fields are deduced from the object.
		fm, err = managedfields.NewDefaultFieldManager(f.deduced, unsafeConvertor, Scheme, Scheme, res.GVK(), res.GroupVersion(), subresource, nil)
	} else {
		fm, err = managedfields.NewDefaultFieldManager(f.builtin, unsafeConvertor, Scheme, Scheme, res.GVK(), res.GroupVersion(), subresource, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("field manager for %s: %w", res.GVK(), err)
	}
	f.byKey[key] = fm
	return fm, nil
}

// builtinSchema lists the groups whose types client-go's structured-merge
// schema knows.
var builtinSchema = func() map[string]bool {
	m := map[string]bool{}
	for _, gv := range Scheme.PrioritizedVersionsAllGroups() {
		if gv.Group != "apiextensions.k8s.io" && gv.Group != "meta.k8s.io" {
			m[gv.Group] = true
		}
	}
	return m
}()

// managerName is the field manager of a non-apply write: the fieldManager
// parameter, else the client's user agent program name as Kubernetes does.
func managerName(req *request) string {
	if m := req.query("fieldManager"); m != "" {
		return m
	}
	ua := req.r.UserAgent()
	if i := strings.IndexAny(ua, "/ "); i > 0 {
		ua = ua[:i]
	}
	if ua == "" {
		return "unknown"
	}
	if len(ua) > 128 {
		ua = ua[:128]
	}
	return ua
}

// unstructuredConvertor is the identity conversion, defaulting and
// creation for custom resources, which are served in one version.
type unstructuredConvertor struct{}

func (unstructuredConvertor) Convert(in, out, context any) error {
	src, ok1 := in.(*unstructured.Unstructured)
	dst, ok2 := out.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return fmt.Errorf("cannot convert %T to %T", in, out)
	}
	dst.Object = runtime.DeepCopyJSON(src.Object)
	return nil
}

func (unstructuredConvertor) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	kind := in.GetObjectKind().GroupVersionKind()
	if target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{kind}); ok && target != kind {
		return nil, fmt.Errorf("custom resources are served in one version: cannot convert %s to %s", kind, target)
	}
	return in, nil
}

func (unstructuredConvertor) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

func (unstructuredConvertor) Default(runtime.Object) {}

func (unstructuredConvertor) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(kind)
	return u, nil
}

// unvalidatedConverter is the built-in kinds' TypeConverter without the
// schema validation structured-merge-diff runs on every object it converts
// (in profiles two thirds of the cost of tracking managedFields on a
// write): for a Go object of a k8s.io/api type, generated from the same
// release as the schema, validation can only fail on an associative list
// element that lacks a key field, and the comparison that follows in an
// update looks up every such key itself and fails on the same object,
// except below an atomic list or map, which it does not descend. Kinds
// with an associative list below an atomic one keep validation; so do
// unstructured objects (apply configurations). trackFields falls back to
// the validating field manager whenever the unvalidated one fails, so a
// write's managedFields are always what Kubernetes computes.
type unvalidatedConverter struct {
	exact managedfields.TypeConverter
	types sync.Map // schema.GroupVersionKind → *typedKind
}

// typedKind is a kind's place in the structured-merge schema; safe says
// that no associative list sits below an atomic list or map in it.
type typedKind struct {
	schema *smdschema.Schema
	ref    smdschema.TypeRef
	safe   bool
}

func (c *unvalidatedConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	if _, ok := obj.(runtime.Unstructured); ok {
		return c.exact.ObjectToTyped(obj, opts...)
	}
	k := c.kind(obj.GetObjectKind().GroupVersionKind())
	if k == nil || !k.safe {
		return c.exact.ObjectToTyped(obj, opts...)
	}
	v, err := value.NewValueReflect(obj)
	if err != nil {
		return c.exact.ObjectToTyped(obj, opts...)
	}
	//lint:ignore SA1019 validation is skipped on purpose; see unvalidatedConverter.
	return typed.AsTypedUnvalidated(v, k.schema, k.ref), nil //nolint:staticcheck
}

func (c *unvalidatedConverter) TypedToObject(tv *typed.TypedValue) (runtime.Object, error) {
	return c.exact.TypedToObject(tv)
}

// kind finds a kind's schema by converting an empty object of it with the
// validating converter (nil when that fails).
func (c *unvalidatedConverter) kind(gvk schema.GroupVersionKind) *typedKind {
	if k, ok := c.types.Load(gvk); ok {
		return k.(*typedKind)
	}
	var k *typedKind
	if obj, err := Scheme.New(gvk); err == nil {
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		if tv, err := c.exact.ObjectToTyped(obj, typed.AllowDuplicates); err == nil {
			k = &typedKind{schema: tv.Schema(), ref: tv.TypeRef()}
			k.safe = !associativeBelowAtomic(tv.Schema(), tv.TypeRef(), reflect.TypeOf(obj), false, map[atomicWalkKey]bool{})
		}
	}
	c.types.Store(gvk, k)
	return k
}

type atomicWalkKey struct {
	name   string
	goType reflect.Type
	atomic bool
}

// associativeBelowAtomic says whether validation could refuse a Go object
// of type goType below ref where the comparison would not look: below an
// atomic list or map (atomic: ref itself is below one), a keyed list whose
// element may lack a key (the Go field is omitempty or a pointer and the
// schema has no default for it), or a set whose elements are not scalars.
// Sets of scalars and keys that are always encoded cannot fail validation
// (duplicates are allowed). Anything it cannot match up counts as unsafe.
func associativeBelowAtomic(s *smdschema.Schema, ref smdschema.TypeRef, goType reflect.Type, atomic bool, seen map[atomicWalkKey]bool) bool {
	for goType.Kind() == reflect.Pointer {
		goType = goType.Elem()
	}
	if ref.NamedType != nil {
		k := atomicWalkKey{name: *ref.NamedType, goType: goType, atomic: atomic}
		if ref.ElementRelationship != nil {
			k.name += "/" + string(*ref.ElementRelationship)
		}
		if seen[k] {
			return false
		}
		seen[k] = true
	}
	a, ok := s.Resolve(ref)
	if !ok {
		return true
	}
	switch {
	case a.Scalar != nil:
		// Scalars, custom-encoded Go types (times, quantities) and deduced
		// (untyped) values: no keyed lists below.
		return false
	case a.List != nil:
		if goType.Kind() != reflect.Slice && goType.Kind() != reflect.Array {
			return true
		}
		elem := goType.Elem()
		if atomic && a.List.ElementRelationship == smdschema.Associative {
			if len(a.List.Keys) == 0 {
				switch elem.Kind() {
				case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
					reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
				default:
					return true
				}
			} else {
				et, ok := s.Resolve(a.List.ElementType)
				if !ok || et.Map == nil || elem.Kind() != reflect.Struct {
					return true
				}
				for _, key := range a.List.Keys {
					sf, ok := et.Map.FindField(key)
					if !ok {
						return true
					}
					if sf.Default != nil {
						continue
					}
					f, omitempty, ok := jsonField(elem, key)
					if !ok || omitempty || f.Type.Kind() == reflect.Pointer {
						return true
					}
				}
			}
		}
		return associativeBelowAtomic(s, a.List.ElementType, elem, atomic || a.List.ElementRelationship == smdschema.Atomic, seen)
	case a.Map != nil:
		below := atomic || a.Map.ElementRelationship == smdschema.Atomic
		switch goType.Kind() {
		case reflect.Map:
			if a.Map.ElementType == (smdschema.TypeRef{}) {
				return true
			}
			return associativeBelowAtomic(s, a.Map.ElementType, goType.Elem(), below, seen)
		case reflect.Struct:
			for _, sf := range a.Map.Fields {
				f, _, ok := jsonField(goType, sf.Name)
				if !ok {
					return true
				}
				if associativeBelowAtomic(s, sf.Type, f.Type, below, seen) {
					return true
				}
			}
			return false
		}
		return true
	}
	return false
}

// jsonField finds the field of struct t encoded as name, looking into
// inlined embedded structs, and says whether it is omitted when empty.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		tagName, opts, _ := strings.Cut(tag, ",")
		if tagName == "-" {
			continue
		}
		if tagName == "" && (f.Anonymous || strings.Contains(","+opts+",", ",inline,")) {
			inner := f.Type
			for inner.Kind() == reflect.Pointer {
				inner = inner.Elem()
			}
			if inner.Kind() == reflect.Struct {
				if g, omit, ok := jsonField(inner, name); ok {
					return g, omit, true
				}
			}
			continue
		}
		if tagName == "" {
			tagName = f.Name
		}
		if tagName == name {
			return f, strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,"), true
		}
	}
	return reflect.StructField{}, false, false
}
