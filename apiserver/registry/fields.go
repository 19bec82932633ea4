package registry

import (
	"fmt"
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
	var content map[string]any
	if u, ok := obj.(*unstructured.Unstructured); ok {
		content = u.Object
	} else {
		content, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, err
		}
	}
	for _, f := range r.SelectableFields {
		set[f] = fieldString(content, strings.Split(f, "."))
	}
	return set, nil
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
