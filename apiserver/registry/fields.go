package registry

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

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
		paths = make([]string, len(r.SelectableFields))
		for i, f := range r.SelectableFields {
			paths[i] = f
			if l, ok := r.FieldLabels[f]; ok {
				paths[i] = l.Path
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
	for i, f := range r.SelectableFields {
		v := values[i]
		if l, ok := r.FieldLabels[f]; ok && v == "" {
			v = l.Absent
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
		s, ok := typedField(v, p)
		if !ok {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

var jsonMarshalerType = reflect.TypeFor[json.Marshaler]()

// typedField reads one dotted JSON path from v (see typedFields).
func typedField(v reflect.Value, path string) (string, bool) {
	rest := path
	for {
		if customJSON(v.Type()) {
			return "", false
		}
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return "", true // absent
			}
			v = v.Elem()
			if customJSON(v.Type()) {
				return "", false
			}
		}
		if rest == "" {
			break
		}
		if v.Kind() != reflect.Struct {
			return "", false
		}
		var name string
		name, rest, _ = strings.Cut(rest, ".")
		f, omitempty, ok := jsonStructField(v, name)
		if !ok {
			return "", false
		}
		if omitempty && emptyForJSON(f) {
			return "", true // omitted from the unstructured form
		}
		v = f
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), true
	case reflect.Bool:
		if v.Bool() {
			return "true", true
		}
		return "false", true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fmt.Sprint(v.Int()), true
	}
	return "", false
}

func customJSON(t reflect.Type) bool {
	return t.Implements(jsonMarshalerType) || reflect.PointerTo(t).Implements(jsonMarshalerType)
}

// jsonStructField finds the field of struct v encoded as name, looking into
// inlined embedded structs, and says whether it is omitted when empty.
func jsonStructField(v reflect.Value, name string) (reflect.Value, bool, bool) {
	t := v.Type()
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
				if f, omit, ok := jsonStructField(v.Field(i), name); ok {
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
				return reflect.Value{}, false, false // left to the conversion
			}
			return v.Field(i), strings.Contains(opts, ",omitempty,"), true
		}
	}
	return reflect.Value{}, false, false
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
// "source" on core events is an object; Kubernetes matches its component.
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
	case map[string]any:
		if c, ok := t["component"].(string); ok {
			return c
		}
	}
	return ""
}
