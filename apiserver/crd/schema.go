package crd

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// rootFields are kept at the root whatever the schema says.
var rootFields = map[string]bool{"apiVersion": true, "kind": true, "metadata": true}

func contentOf(obj runtime.Object) map[string]any {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object
	}
	return nil
}

// pruneObject removes fields the schema does not declare and returns their
// dotted paths, sorted.
func pruneObject(obj runtime.Object, s *apiextensionsv1.JSONSchemaProps) []string {
	content := contentOf(obj)
	if content == nil || s == nil {
		return nil
	}
	var unknown []string
	for k, v := range content {
		if rootFields[k] {
			continue
		}
		prop, ok := s.Properties[k]
		switch {
		case ok:
			content[k] = prune(v, &prop, k, &unknown)
		case s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields:
		default:
			delete(content, k)
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	return unknown
}

func prune(v any, s *apiextensionsv1.JSONSchemaProps, path string, unknown *[]string) any {
	if s == nil {
		return v
	}
	preserve := s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
	switch t := v.(type) {
	case map[string]any:
		if s.XEmbeddedResource {
			preserve = preserve || len(s.Properties) == 0
		}
		for k, child := range t {
			if prop, ok := s.Properties[k]; ok {
				t[k] = prune(child, &prop, path+"."+k, unknown)
				continue
			}
			if s.AdditionalProperties != nil {
				if s.AdditionalProperties.Schema != nil {
					t[k] = prune(child, s.AdditionalProperties.Schema, path+"."+k, unknown)
				}
				continue
			}
			if s.XEmbeddedResource && rootFields[k] {
				continue
			}
			if !preserve {
				delete(t, k)
				*unknown = append(*unknown, path+"."+k)
			}
		}
	case []any:
		if s.Items != nil && s.Items.Schema != nil {
			for i := range t {
				t[i] = prune(t[i], s.Items.Schema, fmt.Sprintf("%s[%d]", path, i), unknown)
			}
		}
	}
	return v
}

// applyDefaults sets schema defaults of absent properties, recursively.
func applyDefaults(obj runtime.Object, s *apiextensionsv1.JSONSchemaProps) {
	if content := contentOf(obj); content != nil && s != nil {
		defaultValue(content, s)
	}
}

func defaultValue(v any, s *apiextensionsv1.JSONSchemaProps) {
	switch t := v.(type) {
	case map[string]any:
		for name, prop := range s.Properties {
			if _, ok := t[name]; !ok && prop.Default != nil {
				var d any
				if err := json.Unmarshal(prop.Default.Raw, &d); err == nil {
					t[name] = normalizeNumbers(d)
				}
			}
			if child, ok := t[name]; ok && child != nil {
				p := prop
				defaultValue(child, &p)
			}
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			for k, child := range t {
				if _, declared := s.Properties[k]; !declared {
					defaultValue(child, s.AdditionalProperties.Schema)
				}
			}
		}
	case []any:
		if s.Items != nil && s.Items.Schema != nil {
			for _, it := range t {
				defaultValue(it, s.Items.Schema)
			}
		}
	}
}

// normalizeNumbers turns whole float64s from encoding/json into int64, as
// the unstructured decoder does.
func normalizeNumbers(v any) any {
	switch t := v.(type) {
	case float64:
		if t == float64(int64(t)) {
			return int64(t)
		}
	case map[string]any:
		for k, c := range t {
			t[k] = normalizeNumbers(c)
		}
	case []any:
		for i, c := range t {
			t[i] = normalizeNumbers(c)
		}
	}
	return v
}

// validateObject checks an object against the schema (the root's metadata
// is validated by the generic rules instead).
func validateObject(obj runtime.Object, s *apiextensionsv1.JSONSchemaProps) field.ErrorList {
	content := contentOf(obj)
	if content == nil || s == nil {
		return nil
	}
	root := map[string]any{}
	for k, v := range content {
		if !rootFields[k] {
			root[k] = v
		}
	}
	var errs field.ErrorList
	for _, req := range s.Required {
		if rootFields[req] {
			continue
		}
		if _, ok := root[req]; !ok {
			errs = append(errs, field.Required(field.NewPath(req), ""))
		}
	}
	for k, v := range root {
		if prop, ok := s.Properties[k]; ok {
			errs = append(errs, validateValue(v, &prop, field.NewPath(k))...)
		}
	}
	return errs
}

func jsonType(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64, int32, int:
		return "integer"
	case float64:
		if t == float64(int64(t)) {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

func typeError(p *field.Path, got, want string) *field.Error {
	return field.Invalid(p, got, fmt.Sprintf("%s in body must be of type %s: %q", p.String(), want, got))
}

func validateValue(v any, s *apiextensionsv1.JSONSchemaProps, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	got := jsonType(v)
	if got == "null" {
		if s.Nullable || s.XPreserveUnknownFields != nil {
			return nil
		}
		if s.Type != "" {
			return field.ErrorList{typeError(p, got, s.Type)}
		}
		return nil
	}
	if s.XIntOrString {
		if got != "integer" && got != "string" {
			return field.ErrorList{typeError(p, got, "integer or string")}
		}
	} else if s.Type != "" {
		ok := got == s.Type || (s.Type == "number" && got == "integer")
		if !ok {
			return field.ErrorList{typeError(p, got, s.Type)}
		}
	}
	if len(s.Enum) > 0 {
		var allowed []string
		match := false
		for _, e := range s.Enum {
			var ev any
			if json.Unmarshal(e.Raw, &ev) == nil {
				ev = normalizeNumbers(ev)
				if fmt.Sprint(ev) == fmt.Sprint(v) {
					match = true
				}
				allowed = append(allowed, fmt.Sprint(ev))
			}
		}
		if !match {
			errs = append(errs, field.NotSupported(p, v, allowed))
		}
	}
	switch t := v.(type) {
	case string:
		if s.MaxLength != nil && int64(len([]rune(t))) > *s.MaxLength {
			errs = append(errs, field.TooLongMaxLength(p, t, int(*s.MaxLength)))
		}
		if s.MinLength != nil && int64(len([]rune(t))) < *s.MinLength {
			errs = append(errs, field.Invalid(p, t, fmt.Sprintf("%s in body should be at least %d chars long", p.String(), *s.MinLength)))
		}
		if s.Pattern != "" {
			if re, err := regexp.Compile(s.Pattern); err == nil && !re.MatchString(t) {
				errs = append(errs, field.Invalid(p, t, fmt.Sprintf("%s in body should match '%s'", p.String(), s.Pattern)))
			}
		}
	case int64, float64, int32, int:
		f := toFloat(t)
		if s.Maximum != nil && (f > *s.Maximum || s.ExclusiveMaximum && f == *s.Maximum) {
			errs = append(errs, field.Invalid(p, v, fmt.Sprintf("%s in body should be less than or equal to %v", p.String(), *s.Maximum)))
		}
		if s.Minimum != nil && (f < *s.Minimum || s.ExclusiveMinimum && f == *s.Minimum) {
			errs = append(errs, field.Invalid(p, v, fmt.Sprintf("%s in body should be greater than or equal to %v", p.String(), *s.Minimum)))
		}
	case []any:
		if s.MaxItems != nil && int64(len(t)) > *s.MaxItems {
			errs = append(errs, field.TooMany(p, len(t), int(*s.MaxItems)))
		}
		if s.MinItems != nil && int64(len(t)) < *s.MinItems {
			errs = append(errs, field.Invalid(p, len(t), fmt.Sprintf("%s in body should have at least %d items", p.String(), *s.MinItems)))
		}
		if s.Items != nil && s.Items.Schema != nil {
			for i, it := range t {
				errs = append(errs, validateValue(it, s.Items.Schema, p.Index(i))...)
			}
		}
	case map[string]any:
		for _, req := range s.Required {
			if _, ok := t[req]; !ok {
				errs = append(errs, field.Required(p.Child(req), ""))
			}
		}
		if s.MaxProperties != nil && int64(len(t)) > *s.MaxProperties {
			errs = append(errs, field.TooMany(p, len(t), int(*s.MaxProperties)))
		}
		if s.MinProperties != nil && int64(len(t)) < *s.MinProperties {
			errs = append(errs, field.Invalid(p, len(t), fmt.Sprintf("%s in body should have at least %d properties", p.String(), *s.MinProperties)))
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if prop, ok := s.Properties[k]; ok {
				errs = append(errs, validateValue(t[k], &prop, p.Child(k))...)
			} else if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
				errs = append(errs, validateValue(t[k], s.AdditionalProperties.Schema, p.Key(k))...)
			}
		}
	}
	return errs
}

func toFloat(v any) float64 {
	switch t := v.(type) {
	case int64:
		return float64(t)
	case int32:
		return float64(t)
	case int:
		return float64(t)
	case float64:
		return t
	}
	return 0
}

var _ = strings.TrimSpace
