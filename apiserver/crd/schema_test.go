package crd

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const widgetSchema = `
type: object
properties:
  spec:
    type: object
    required: [size]
    properties:
      size: {type: integer, minimum: 1, maximum: 10}
      color: {type: string, enum: [red, blue], default: blue}
      name: {type: string, pattern: "^[a-z]+$", maxLength: 5}
      tags: {type: array, maxItems: 2, items: {type: string}}
      port: {x-kubernetes-int-or-string: true}
      labels: {type: object, additionalProperties: {type: string}}
  status:
    type: object
    x-kubernetes-preserve-unknown-fields: true
`

func schemaOf(t *testing.T) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	s := &apiextensionsv1.JSONSchemaProps{}
	if err := yaml.Unmarshal([]byte(widgetSchema), s); err != nil {
		t.Fatal(err)
	}
	return s
}

func widget(t *testing.T, spec string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	data, err := yaml.YAMLToJSON([]byte("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: " + spec))
	if err != nil {
		t.Fatal(err)
	}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestValidateObject(t *testing.T) {
	s := schemaOf(t)
	cases := []struct {
		spec string
		want []string // substrings of the error list; empty means valid
	}{
		{"{size: 3}", nil},
		{"{size: 3, color: red, name: abc, tags: [a, b], port: http, labels: {a: b}}", nil},
		{"{size: 3, port: 8080}", nil},
		{"{}", []string{"spec.size: Required value"}},
		{"{size: 0}", []string{"spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"}},
		{"{size: 11}", []string{"should be less than or equal to 10"}},
		{`{size: "3"}`, []string{`spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"`}},
		{"{size: 1, color: green}", []string{`spec.color: Unsupported value: "green": supported values: "red", "blue"`}},
		{"{size: 1, name: ABC}", []string{"should match '^[a-z]+$'"}},
		{"{size: 1, name: abcdefg}", []string{"spec.name: Too long"}},
		{"{size: 1, tags: [a, b, c]}", []string{"spec.tags: Too many"}},
		{"{size: 1, tags: [1]}", []string{"spec.tags[0]"}},
		{"{size: 1, port: [1]}", []string{"must be of type integer or string"}},
		{"{size: 1, labels: {a: 1}}", []string{"spec.labels[a]"}},
	}
	for _, tc := range cases {
		errs := validateObject(widget(t, tc.spec), s)
		got := errs.ToAggregate()
		if len(tc.want) == 0 {
			if got != nil {
				t.Errorf("%s: unexpected errors %v", tc.spec, got)
			}
			continue
		}
		if got == nil {
			t.Errorf("%s: no error, want %v", tc.spec, tc.want)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(got.Error(), w) {
				t.Errorf("%s: %q lacks %q", tc.spec, got.Error(), w)
			}
		}
	}
}

func TestPruneAndDefault(t *testing.T) {
	s := schemaOf(t)
	u := widget(t, "{size: 2, extra: 1, labels: {keep: x}}")
	u.Object["status"] = map[string]any{"anything": "kept"}
	u.Object["top"] = "dropped"
	unknown := pruneObject(u, s)
	if strings.Join(unknown, ",") != "spec.extra,top" {
		t.Errorf("pruned %v, want [spec.extra top]", unknown)
	}
	if _, ok := u.Object["top"]; ok {
		t.Error("unknown root field kept")
	}
	if u.Object["status"].(map[string]any)["anything"] != "kept" {
		t.Error("preserve-unknown-fields status was pruned")
	}
	applyDefaults(u, s)
	if u.Object["spec"].(map[string]any)["color"] != "blue" {
		t.Errorf("default not applied: %v", u.Object["spec"])
	}
}

func TestValidateCRD(t *testing.T) {
	good := &apiextensionsv1.CustomResourceDefinition{}
	good.Name = "widgets.example.com"
	good.Spec = apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}},
	}
	defaultCRD(good)
	if errs := validateCRD(good); len(errs) != 0 {
		t.Fatalf("valid CRD: %v", errs)
	}
	bad := good.DeepCopy()
	bad.Name = "wrong.example.com"
	bad.Spec.Versions[0].Storage = false
	bad.Spec.Versions[0].Schema = nil
	bad.Spec.Scope = "Galaxy"
	msg := validateCRD(bad).ToAggregate().Error()
	for _, w := range []string{`metadata.name: Invalid value: "wrong.example.com": must be spec.names.plural+"."+spec.group`,
		"spec.versions[0].schema.openAPIV3Schema: Required value", "must have exactly one version marked as storage version", `spec.scope: Unsupported value: "Galaxy"`} {
		if !strings.Contains(msg, w) {
			t.Errorf("%q lacks %q", msg, w)
		}
	}
}
