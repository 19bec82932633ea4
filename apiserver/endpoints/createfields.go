package endpoints

import (
	stdencoding "encoding"
	"encoding/binary"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

// createFieldsCache remembers the managedFields that creates were given,
// by everything those depend on, so that a create like an earlier one
// skips structured-merge-diff (in profiles the largest single cost of a
// create, and a tenth of the API server's allocations under load).
//
// A create's managedFields are one entry (or none, for an object with no
// fields of its own) naming the manager, the operation, the API version,
// the time and the set of fields the object has. That set is a function of
// the kind, the subresource and the object's shape: which fields are
// present, which keys its maps have, and, in lists, the elements' key
// fields (associative lists) or values (sets). A scalar's value outside any
// list only decides whether the field is there at all. createShape records
// exactly that, and errs towards telling objects apart: it keeps every
// value inside a list, not only keys, and whether each scalar outside one
// is its type's zero, so objects with the same shape have the same fields
// (TestCreateShapeDeterminesManagedFields varies everything else and
// checks). Kubelet events, or the pods of one template, share a shape.
type createFieldsCache struct {
	mu      sync.Mutex
	entries map[string][]metav1.ManagedFieldsEntry
}

// createFieldsCacheSize bounds the shapes remembered, and maxShapeKey the
// size of one: an object with long lists (an Endpoints of a big Service)
// is tracked as before rather than cached.
const (
	createFieldsCacheSize = 512
	maxShapeKey           = 8 << 10
)

func newCreateFieldsCache() *createFieldsCache {
	return &createFieldsCache{entries: map[string][]metav1.ManagedFieldsEntry{}}
}

// track records the create of obj by manager in its managedFields: from
// the cache when an object of its shape was created before, else with the
// field managers (see trackUpdate) over the empty object newEmpty returns,
// remembering the result.
func (c *createFieldsCache) track(exact, fast *managedfields.FieldManager, gvk schema.GroupVersionKind, subresource, manager string, obj runtime.Object, newEmpty func() runtime.Object) runtime.Object {
	bp := shapeBuffers.Get().(*[]byte)
	key, ok := createFieldsKey((*bp)[:0], gvk, subresource, manager, obj)
	if cap(key) <= 2*maxShapeKey {
		*bp = key
		defer shapeBuffers.Put(bp)
	}
	if !ok || len(key) > maxShapeKey {
		return trackUpdate(exact, fast, newEmpty(), obj, manager)
	}
	c.mu.Lock()
	cached, hit := c.entries[string(key)]
	c.mu.Unlock()
	if hit {
		accessor(obj).SetManagedFields(copyManagedFields(cached, time.Now().UTC()))
		return obj
	}
	out := trackUpdate(exact, fast, newEmpty(), obj, manager)
	entries := copyManagedFields(accessor(out).GetManagedFields(), time.Time{})
	c.mu.Lock()
	if len(c.entries) >= createFieldsCacheSize {
		for k := range c.entries { // any one: shapes are not worth an LRU
			delete(c.entries, k)
			break
		}
	}
	c.entries[string(key)] = entries
	c.mu.Unlock()
	return out
}

// createFieldsKey appends to b the cache key of a create of obj by manager.
func createFieldsKey(b []byte, gvk schema.GroupVersionKind, subresource, manager string, obj runtime.Object) ([]byte, bool) {
	for _, s := range []string{gvk.Group, gvk.Version, gvk.Kind, subresource, manager} {
		b = appendString(b, s)
	}
	return createShape(b, obj)
}

var shapeBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// copyManagedFields deep-copies entries; a non-zero now replaces their
// times (the field manager stamps the entry of a create with the time of
// the write).
func copyManagedFields(entries []metav1.ManagedFieldsEntry, now time.Time) []metav1.ManagedFieldsEntry {
	if entries == nil {
		return nil
	}
	out := make([]metav1.ManagedFieldsEntry, len(entries))
	for i := range entries {
		entries[i].DeepCopyInto(&out[i])
		if !now.IsZero() && out[i].Time != nil {
			out[i].Time = &metav1.Time{Time: now}
		}
	}
	return out
}

// createShape appends obj's shape (see createFieldsCache) to b; false when
// obj holds something it cannot describe (an interface value: none of the
// built-in kinds do).
func createShape(b []byte, obj runtime.Object) ([]byte, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return b, false
	}
	p := planFor(v.Type().Elem())
	if p.unsupported {
		return b, false
	}
	return p.appendShape(b, v.Elem(), false), true
}

// shapePlan is how createShape walks one Go type.
type shapePlan struct {
	kind reflect.Kind
	// custom: the type encodes itself (json.Marshaler, encoding.TextMarshaler);
	// scalar says it always encodes to one JSON scalar or null.
	custom, scalar bool
	intOrString    bool
	elem           *shapePlan // pointer, slice, array, map value
	fields         []fieldShape
	unsupported    bool // holds an interface, a func or a channel, or a map keyed by non-strings
	t              reflect.Type
}

type fieldShape struct {
	index int
	plan  *shapePlan
}

var (
	shapePlans  sync.Map // reflect.Type → *shapePlan
	jsonMarshal = reflect.TypeFor[json.Marshaler]()
	textMarshal = reflect.TypeFor[stdencoding.TextMarshaler]()
	// scalarTypes encode themselves as one JSON scalar or null: the schema
	// types them as scalars, whose value does not change the field set.
	scalarTypes = map[reflect.Type]bool{
		reflect.TypeFor[metav1.Time]():        true,
		reflect.TypeFor[metav1.MicroTime]():   true,
		reflect.TypeFor[metav1.Duration]():    true,
		reflect.TypeFor[resource.Quantity]():  true,
		reflect.TypeFor[intstr.IntOrString](): true,
	}
)

func planFor(t reflect.Type) *shapePlan {
	if p, ok := shapePlans.Load(t); ok {
		return p.(*shapePlan)
	}
	building := map[reflect.Type]*shapePlan{}
	p := buildPlan(t, building)
	markUnsupported(p, map[*shapePlan]bool{})
	for typ, bp := range building {
		shapePlans.LoadOrStore(typ, bp)
	}
	return p
}

// buildPlan builds t's plan; building holds the plans of the types being
// built, so that recursive types end.
func buildPlan(t reflect.Type, building map[reflect.Type]*shapePlan) *shapePlan {
	if p, ok := shapePlans.Load(t); ok {
		return p.(*shapePlan)
	}
	if p, ok := building[t]; ok {
		return p
	}
	p := &shapePlan{kind: t.Kind(), t: t}
	building[t] = p
	// A pointer is nil or not, then what it points to: its method set
	// holds its element's, which decide the encoding.
	if t.Kind() != reflect.Pointer && (t.Implements(jsonMarshal) || reflect.PointerTo(t).Implements(jsonMarshal) ||
		t.Implements(textMarshal) || reflect.PointerTo(t).Implements(textMarshal)) {
		p.custom = true
		p.scalar = scalarTypes[t]
		p.intOrString = t == reflect.TypeFor[intstr.IntOrString]()
		return p
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		p.elem = buildPlan(t.Elem(), building)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			p.unsupported = true
			return p
		}
		p.elem = buildPlan(t.Elem(), building)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() { // encoding/json skips them too
				continue
			}
			if tag := f.Tag.Get("json"); tag == "-" {
				continue
			}
			p.fields = append(p.fields, fieldShape{index: i, plan: buildPlan(f.Type, building)})
		}
	case reflect.Interface, reflect.Func, reflect.Chan, reflect.UnsafePointer, reflect.Complex64, reflect.Complex128:
		p.unsupported = true
	}
	return p
}

// markUnsupported spreads unsupported up from the types that are.
func markUnsupported(p *shapePlan, seen map[*shapePlan]bool) bool {
	if seen[p] {
		return p.unsupported
	}
	seen[p] = true
	if p.elem != nil && markUnsupported(p.elem, seen) {
		p.unsupported = true
	}
	for _, f := range p.fields {
		if markUnsupported(f.plan, seen) {
			p.unsupported = true
		}
	}
	return p.unsupported
}

// Markers of the shape. Values and lengths follow as varints, strings as a
// length and the bytes: the plan of the type fixes which field each mark
// belongs to, so the encoding is unambiguous without field names.
const (
	markZero    = 'z' // a scalar outside a list that is its type's zero
	markSet     = 's' // a scalar outside a list that is not
	markNil     = 'n'
	markPresent = 'p'
)

// appendShape appends v's shape; inList says v is inside a list, where
// values count.
func (p *shapePlan) appendShape(b []byte, v reflect.Value, inList bool) []byte {
	if p.custom {
		if !inList && p.scalar {
			if v.IsZero() {
				b = append(b, markZero)
			} else {
				b = append(b, markSet)
			}
			if p.intOrString {
				b = append(b, byte(v.Interface().(intstr.IntOrString).Type))
			}
			return b
		}
		return appendEncoded(b, v)
	}
	switch p.kind {
	case reflect.Pointer:
		if v.IsNil() {
			return append(b, markNil)
		}
		return p.elem.appendShape(append(b, markPresent), v.Elem(), inList)
	case reflect.Struct:
		for _, f := range p.fields {
			b = f.plan.appendShape(b, v.Field(f.index), inList)
		}
		return b
	case reflect.Slice:
		if v.IsNil() {
			return append(b, markNil)
		}
		if p.elem.kind == reflect.Uint8 && !p.elem.custom { // []byte: one base64 scalar
			if !inList {
				return append(b, markPresent, boolByte(v.Len() > 0))
			}
			return appendString(append(b, markPresent), string(v.Bytes()))
		}
		fallthrough
	case reflect.Array:
		b = binary.AppendUvarint(append(b, markPresent), uint64(v.Len()))
		for i := range v.Len() {
			b = p.elem.appendShape(b, v.Index(i), true)
		}
		return b
	case reflect.Map:
		if v.IsNil() {
			return append(b, markNil)
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int {
			switch as, bs := a.String(), b.String(); {
			case as < bs:
				return -1
			case as > bs:
				return 1
			}
			return 0
		})
		b = binary.AppendUvarint(append(b, markPresent), uint64(len(keys)))
		for _, k := range keys {
			b = appendString(b, k.String())
			b = p.elem.appendShape(b, v.MapIndex(k), inList)
		}
		return b
	}
	if !inList {
		if v.IsZero() {
			return append(b, markZero)
		}
		return append(b, markSet)
	}
	switch p.kind {
	case reflect.String:
		return appendString(b, v.String())
	case reflect.Bool:
		return append(b, boolByte(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return binary.AppendVarint(b, v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return binary.AppendUvarint(b, v.Uint())
	case reflect.Float32, reflect.Float64:
		return binary.AppendUvarint(b, math.Float64bits(v.Float()))
	}
	return b // unsupported kinds never get here (see markUnsupported)
}

// appendEncoded appends a self-encoding value's JSON (an error's text
// instead, which is as much the value's own).
func appendEncoded(b []byte, v reflect.Value) []byte {
	if !v.CanAddr() { // a map's value: copy it where its pointer methods reach
		c := reflect.New(v.Type()).Elem()
		c.Set(v)
		v = c
	}
	data, err := json.Marshal(v.Addr().Interface())
	if err != nil {
		return appendString(append(b, 'e'), err.Error())
	}
	return appendString(append(b, 'j'), string(data))
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}
