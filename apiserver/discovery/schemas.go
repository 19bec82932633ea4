package discovery

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiffkube/skiff/apiserver/registry"
)

// Schemas for kubectl explain, built from the Go types of k8s.io/api by
// reflection: property names and types from the json tags, descriptions
// from the types' SwaggerDoc() (generated from the same comments
// Kubernetes' own OpenAPI comes from), model names from OpenAPIModelName(),
// patch strategy and merge key from the struct tags. No importable package
// carries Kubernetes' generated OpenAPI of the built-in kinds, but these
// two generated methods of k8s.io/api do carry its content.

// models holds component schemas by model name.
type models map[string]map[string]any

// modelRef is the schema of a field that refers to a model, in the form
// Kubernetes serves (allOf with one $ref, so siblings may add a description).
func modelRef(name string) map[string]any {
	return map[string]any{"allOf": []any{map[string]any{"$ref": "#/components/schemas/" + name}}}
}

type swaggerDoc interface{ SwaggerDoc() map[string]string }
type modelNamer interface{ OpenAPIModelName() string }
type schemaTyper interface {
	OpenAPISchemaType() []string
	OpenAPISchemaFormat() string
}

var (
	rawExtension = reflect.TypeFor[runtime.RawExtension]()
	byteSlice    = reflect.TypeFor[[]byte]()
	// builtModels caches the models reachable from each top-level type:
	// the types never change while the process runs.
	builtModels sync.Map // reflect.Type → models
)

// modelName names a struct type's component: its OpenAPIModelName, else
// the reversed-domain form Kubernetes uses (io.k8s.api.core.v1.Pod).
func modelName(t reflect.Type) string {
	if n, ok := reflect.New(t).Elem().Interface().(modelNamer); ok {
		return n.OpenAPIModelName()
	}
	pkg := t.PkgPath()
	parts := strings.Split(pkg, "/")
	if len(parts) > 0 && strings.Contains(parts[0], ".") {
		host := strings.Split(parts[0], ".")
		for i, j := 0, len(host)-1; i < j; i, j = i+1, j-1 {
			host[i], host[j] = host[j], host[i]
		}
		parts[0] = strings.Join(host, ".")
	}
	return strings.Join(parts, ".") + "." + t.Name()
}

// modelsFor returns the component schemas reachable from obj's type, the
// object's own model name first.
func modelsFor(obj runtime.Object) (string, models) {
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := modelName(t)
	if m, ok := builtModels.Load(t); ok {
		return name, m.(models)
	}
	m := models{}
	schemaOf(t, m)
	builtModels.Store(t, m)
	return name, m
}

// schemaOf returns the schema of a field of type t, adding the models of
// struct types to m.
func schemaOf(t reflect.Type, m models) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == byteSlice {
		return map[string]any{"type": "string", "format": "byte"}
	}
	if st, ok := reflect.New(t).Elem().Interface().(schemaTyper); ok {
		types, format := st.OpenAPISchemaType(), st.OpenAPISchemaFormat()
		switch {
		case format == "int-or-string":
			return map[string]any{"x-kubernetes-int-or-string": true}
		case len(types) == 0:
			// Any JSON value (apiextensions' JSON, JSONSchemaPropsOrBool).
			return map[string]any{"x-kubernetes-preserve-unknown-fields": true}
		}
		s := map[string]any{"type": types[0]}
		if format != "" {
			s["format"] = format
		}
		return s
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int32, reflect.Uint32, reflect.Int16, reflect.Uint16, reflect.Int8, reflect.Uint8:
		return map[string]any{"type": "integer", "format": "int32"}
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64:
		return map[string]any{"type": "integer", "format": "int64"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number", "format": "double"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem(), m)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem(), m)}
	case reflect.Interface:
		return map[string]any{"type": "object"}
	case reflect.Struct:
		if t == rawExtension {
			return map[string]any{"type": "object"}
		}
		name := modelName(t)
		if _, ok := m[name]; !ok {
			model := map[string]any{"type": "object"}
			m[name] = model // before the fields: types may refer to themselves
			fillStruct(t, model, m)
		}
		return modelRef(name)
	}
	return map[string]any{}
}

// fillStruct adds a struct type's properties, required list and description.
func fillStruct(t reflect.Type, model map[string]any, m models) {
	docs := map[string]string{}
	if d, ok := reflect.New(t).Elem().Interface().(swaggerDoc); ok {
		docs = d.SwaggerDoc()
	}
	if d := docs[""]; d != "" {
		model["description"] = d
	}
	props := map[string]any{}
	var required []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if f.Anonymous && (name == "" || strings.Contains(opts, "inline")) {
				ft := f.Type
				for ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					// Embedded (TypeMeta, ObjectMeta in lists): its
					// fields are the parent's, with its descriptions.
					if d, ok := reflect.New(ft).Elem().Interface().(swaggerDoc); ok {
						for k, v := range d.SwaggerDoc() {
							if _, own := docs[k]; !own && k != "" {
								docs[k] = v
							}
						}
					}
					walk(ft)
					continue
				}
			}
			if name == "" {
				name = f.Name
			}
			s := schemaOf(f.Type, m)
			prop := map[string]any{}
			for k, v := range s {
				prop[k] = v
			}
			if d := docs[name]; d != "" {
				prop["description"] = d
			}
			if ps := f.Tag.Get("patchStrategy"); ps != "" {
				prop["x-kubernetes-patch-strategy"] = ps
			}
			if mk := f.Tag.Get("patchMergeKey"); mk != "" {
				prop["x-kubernetes-patch-merge-key"] = mk
			}
			props[name] = prop
			if !strings.Contains(opts, "omitempty") && f.Type.Kind() != reflect.Pointer && !f.Anonymous {
				required = append(required, name)
			}
		}
	}
	walk(t)
	model["properties"] = props
	if len(required) > 0 {
		sort.Strings(required)
		model["required"] = required
	}
}

// customSchema is implemented by the strategies of custom resources.
type customSchema interface {
	OpenAPIV3Schema() *apiextensionsv1.JSONSchemaProps
}

// addCustomSchema adds a custom resource version's schema from its CRD,
// named as Kubernetes names it (com.example.v1.Widget), with apiVersion,
// kind and metadata described as for every object.
func addCustomSchema(out map[string]any, r *registry.Resource) {
	cs, ok := r.Strategy.(customSchema)
	if !ok || cs.OpenAPIV3Schema() == nil {
		return
	}
	data, err := json.Marshal(cs.OpenAPIV3Schema())
	if err != nil {
		return
	}
	var model map[string]any
	if err := json.Unmarshal(data, &model); err != nil {
		return
	}
	m := models{}
	metaRef := schemaOf(reflect.TypeFor[metav1.ObjectMeta](), m)
	for name, s := range m {
		if _, ok := out[name]; !ok {
			out[name] = s
		}
	}
	props, _ := model["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		model["properties"] = props
	}
	typeDocs := metav1.TypeMeta{}.SwaggerDoc()
	if _, ok := props["apiVersion"]; !ok {
		props["apiVersion"] = map[string]any{"type": "string", "description": typeDocs["apiVersion"]}
	}
	if _, ok := props["kind"]; !ok {
		props["kind"] = map[string]any{"type": "string", "description": typeDocs["kind"]}
	}
	if _, ok := props["metadata"]; !ok || len(props["metadata"].(map[string]any)) <= 1 {
		// Described as every built-in kind describes its metadata.
		meta := map[string]any{"description": corev1.ConfigMap{}.SwaggerDoc()["metadata"]}
		for k, v := range metaRef {
			meta[k] = v
		}
		props["metadata"] = meta
	}
	model["x-kubernetes-group-version-kind"] = []any{map[string]string{"group": r.Group, "version": r.Version, "kind": r.Kind}}
	out[customModelName(r)] = model
}

// customModelName reverses the group's domain: example.com/v1 Widget →
// com.example.v1.Widget.
func customModelName(r *registry.Resource) string {
	parts := strings.Split(r.Group, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, ".") + "." + r.Version + "." + r.Kind
}
