package registry

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

// CheckFieldSelector rejects selectors naming a field the resource does not
// index, with the message Kubernetes uses.
func (r *Resource) CheckFieldSelector(sel fields.Selector) error {
	if sel == nil || sel.Empty() {
		return nil
	}
	for _, req := range sel.Requirements() {
		if !r.selectable(req.Field) {
			return fmt.Errorf("field label not supported: %s", req.Field)
		}
	}
	return nil
}

func (r *Resource) selectable(f string) bool {
	if f == "metadata.name" || f == "metadata.namespace" && r.Namespaced {
		return true
	}
	for _, s := range r.SelectableFields {
		if s == f {
			return true
		}
	}
	return false
}

// FieldSet returns the values a field selector is matched against.
func (r *Resource) FieldSet(obj runtime.Object) (fields.Set, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	set := fields.Set{"metadata.name": m.GetName()}
	if r.Namespaced {
		set["metadata.namespace"] = m.GetNamespace()
	}
	if len(r.SelectableFields) == 0 {
		return set, nil
	}
	paths := r.SelectableFields
	if len(r.FieldLabels) > 0 {
		// The labels' paths, then the Else paths after them in the
		// labels' order.
		paths = make([]string, len(r.SelectableFields), len(r.SelectableFields)+len(r.FieldLabels))
		for i, f := range r.SelectableFields {
			paths[i] = f
			if l, ok := r.FieldLabels[f]; ok {
				paths[i] = l.Path
			}
		}
		for _, f := range r.SelectableFields {
			if l, ok := r.FieldLabels[f]; ok && l.Else != "" {
				paths = append(paths, l.Else)
			}
		}
	}
	values, ok := []string(nil), false
	if _, isUnstructured := obj.(*unstructured.Unstructured); !isUnstructured {
		values, ok = typedFields(obj, paths)
	}
	if !ok {
		content, err := unstructuredContent(obj)
		if err != nil {
			return nil, err
		}
		values = make([]string, len(paths))
		for i, p := range paths {
			values[i] = fieldString(content, strings.Split(p, "."))
		}
	}
	next := len(r.SelectableFields)
	for i, f := range r.SelectableFields {
		v := values[i]
		if l, ok := r.FieldLabels[f]; ok {
			if l.Else != "" {
				if v == "" {
					v = values[next]
				}
				next++
			}
			if v == "" {
				v = l.Absent
			}
		}
		set[f] = v
	}
	return set, nil
}

func unstructuredContent(obj runtime.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object, nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

// typedFields returns the fields at paths of a Go object read directly by
// reflection, rendered exactly as fieldString renders them from the
// object's unstructured form, without converting the whole object (what
// every field-selected watch event paid). It reports false, leaving the
// work to the conversion, for anything off its plain path: a field it
// cannot find, a type with its own JSON encoding, a non-scalar leaf.
func typedFields(obj runtime.Object, paths []string) ([]string, bool) {
	v := reflect.ValueOf(obj)
	out := make([]string, len(paths))
	for i, p := range paths {
		plan := planFor(v.Type(), p)
		if !plan.plain {
			return nil, false
		}
		out[i] = plan.read(v)
	}
	return out, true
}

// fieldPlan is how to read one dotted JSON path from values of one Go type,
// worked out once from the type (the struct tags) and kept: finding a field
// by its JSON name walks every field's tag, and a pod's field set reads ten
// paths on every watch event.
type fieldPlan struct {
	plain bool // false: not a plain path; leave it to the conversion
	steps []fieldStep
}

// fieldStep is one path element: the field's index path (through inlined
// embedded structs) in the struct reached after following pointers.
type fieldStep struct {
	index     []int
	omitempty bool
}

type planKey struct {
	t    reflect.Type
	path string
}

var fieldPlans sync.Map // planKey → *fieldPlan

func planFor(t reflect.Type, path string) *fieldPlan {
	k := planKey{t, path}
	if p, ok := fieldPlans.Load(k); ok {
		return p.(*fieldPlan)
	}
	p, _ := fieldPlans.LoadOrStore(k, compilePlan(t, path))
	return p.(*fieldPlan)
}

func compilePlan(t reflect.Type, path string) *fieldPlan {
	plan := &fieldPlan{}
	rest := path
	for {
		if customJSON(t) {
			return &fieldPlan{}
		}
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
			if customJSON(t) {
				return &fieldPlan{}
			}
		}
		if rest == "" {
			break
		}
		if t.Kind() != reflect.Struct {
			return &fieldPlan{}
		}
		var name string
		name, rest, _ = strings.Cut(rest, ".")
		f, omitempty, ok := jsonStructField(t, name)
		if !ok {
			return &fieldPlan{}
		}
		plan.steps = append(plan.steps, fieldStep{index: f.Index, omitempty: omitempty})
		t = f.Type
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		plan.plain = true
		return plan
	}
	return &fieldPlan{}
}

// read renders the field of v the plan leads to; a nil pointer on the way
// or an omitted empty field reads as absent, "".
func (p *fieldPlan) read(v reflect.Value) string {
	for _, st := range p.steps {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return ""
			}
			v = v.Elem()
		}
		v = v.FieldByIndex(st.index)
		if st.omitempty && emptyForJSON(v) {
			return "" // omitted from the unstructured form
		}
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		if v.Bool() {
			return "true"
		}
		return "false"
	default: // the signed integers compilePlan allows
		return strconv.FormatInt(v.Int(), 10)
	}
}

var jsonMarshalerType = reflect.TypeFor[json.Marshaler]()

func customJSON(t reflect.Type) bool {
	return t.Implements(jsonMarshalerType) || reflect.PointerTo(t).Implements(jsonMarshalerType)
}

// jsonStructField finds the field of struct type t encoded as name, looking
// into inlined embedded structs, and says whether it is omitted when empty.
// The field's Index leads to it from t.
func jsonStructField(t reflect.Type, name string) (reflect.StructField, bool, bool) {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tagName, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if tagName == "-" {
			continue
		}
		opts = "," + opts + ","
		if tagName == "" && (sf.Anonymous || strings.Contains(opts, ",inline,")) {
			if sf.Type.Kind() == reflect.Struct {
				if f, omit, ok := jsonStructField(sf.Type, name); ok {
					f.Index = append([]int{i}, f.Index...)
					return f, omit, true
				}
			}
			continue
		}
		if tagName == "" {
			tagName = sf.Name
		}
		if tagName == name {
			if strings.Contains(opts, ",omitzero,") {
				return reflect.StructField{}, false, false // left to the conversion
			}
			return sf, strings.Contains(opts, ",omitempty,"), true
		}
	}
	return reflect.StructField{}, false, false
}

// emptyForJSON is what the unstructured conversion omits as empty under
// omitempty: structs never are.
func emptyForJSON(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Map, reflect.Slice:
		return v.IsNil() || v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// fieldString renders a field for selector matching; absent fields are "".
func fieldString(content map[string]any, path []string) string {
	v, found, err := unstructured.NestedFieldNoCopy(content, path...)
	if err != nil || !found || v == nil {
		return ""
	}
	switch t := v.(type) {
	case string:
		return t
	case bool:
		if t {
			return "true"
		}
		return "false"
	case int64, float64, int32, int:
		return fmt.Sprint(t)
	}
	return ""
}
