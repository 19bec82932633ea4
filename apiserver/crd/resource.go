package crd

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiffkube/skiff/apiserver/registry"
)

// Resource is the registry entry of customresourcedefinitions.
func Resource(table registry.TableConvertor) *registry.Resource {
	return &registry.Resource{
		Group: apiextensionsv1.GroupName, Version: "v1", Name: "customresourcedefinitions",
		Singular: "customresourcedefinition", Kind: "CustomResourceDefinition",
		ShortNames: []string{"crd", "crds"}, Categories: []string{"api-extensions"},
		New:          func() runtime.Object { return &apiextensionsv1.CustomResourceDefinition{} },
		NewList:      func() runtime.Object { return &apiextensionsv1.CustomResourceDefinitionList{} },
		Strategy:     &definitionStrategy{DefaultStrategy: registry.DefaultStrategy{HasStatus: true, Generation: true, RequireResourceVersion: true}},
		Subresources: registry.Subresources{Status: true},
		Table:        table,
	}
}

// definitionStrategy defaults and validates CRDs.
type definitionStrategy struct {
	registry.DefaultStrategy
}

func (s *definitionStrategy) PrepareForCreate(obj runtime.Object) {
	s.DefaultStrategy.PrepareForCreate(obj)
	defaultCRD(obj)
}

func (s *definitionStrategy) PrepareForUpdate(obj, old runtime.Object) {
	s.DefaultStrategy.PrepareForUpdate(obj, old)
	defaultCRD(obj)
}

func (s *definitionStrategy) Validate(obj runtime.Object) field.ErrorList {
	return append(s.DefaultStrategy.Validate(obj), validateCRD(obj)...)
}

func (s *definitionStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	errs := append(s.DefaultStrategy.ValidateUpdate(obj, old), validateCRD(obj)...)
	n, ok1 := obj.(*apiextensionsv1.CustomResourceDefinition)
	o, ok2 := old.(*apiextensionsv1.CustomResourceDefinition)
	if ok1 && ok2 {
		if n.Spec.Scope != o.Spec.Scope {
			errs = append(errs, field.Invalid(field.NewPath("spec", "scope"), n.Spec.Scope, "field is immutable"))
		}
		if n.Spec.Group != o.Spec.Group {
			errs = append(errs, field.Invalid(field.NewPath("spec", "group"), n.Spec.Group, "field is immutable"))
		}
	}
	return errs
}

func defaultCRD(obj runtime.Object) {
	c, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return
	}
	if c.Spec.Names.Singular == "" {
		c.Spec.Names.Singular = strings.ToLower(c.Spec.Names.Kind)
	}
	if c.Spec.Names.ListKind == "" && c.Spec.Names.Kind != "" {
		c.Spec.Names.ListKind = c.Spec.Names.Kind + "List"
	}
	if c.Spec.Conversion == nil {
		c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	}
}

// validateCRD checks what serving the resource depends on, with Kubernetes'
// field paths and wording.
func validateCRD(obj runtime.Object) field.ErrorList {
	c, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return nil
	}
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if c.Name != c.Spec.Names.Plural+"."+c.Spec.Group {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), c.Name, `must be spec.names.plural+"."+spec.group`))
	}
	if c.Spec.Group == "" {
		errs = append(errs, field.Required(spec.Child("group"), ""))
	} else if msgs := validation.IsDNS1123Subdomain(c.Spec.Group); len(msgs) > 0 {
		errs = append(errs, field.Invalid(spec.Child("group"), c.Spec.Group, strings.Join(msgs, ",")))
	} else if len(strings.Split(c.Spec.Group, ".")) < 2 {
		errs = append(errs, field.Invalid(spec.Child("group"), c.Spec.Group, "should be a domain with at least one dot"))
	}
	names := spec.Child("names")
	for _, n := range []struct {
		path, value string
		label       bool
	}{{"plural", c.Spec.Names.Plural, true}, {"singular", c.Spec.Names.Singular, true}, {"kind", c.Spec.Names.Kind, false}, {"listKind", c.Spec.Names.ListKind, false}} {
		if n.value == "" {
			errs = append(errs, field.Required(names.Child(n.path), ""))
			continue
		}
		if n.label {
			if msgs := validation.IsDNS1035Label(n.value); len(msgs) > 0 {
				errs = append(errs, field.Invalid(names.Child(n.path), n.value, strings.Join(msgs, ",")))
			}
		}
	}
	for i, s := range c.Spec.Names.ShortNames {
		if msgs := validation.IsDNS1035Label(s); len(msgs) > 0 {
			errs = append(errs, field.Invalid(names.Child("shortNames").Index(i), s, strings.Join(msgs, ",")))
		}
	}
	switch c.Spec.Scope {
	case apiextensionsv1.NamespaceScoped, apiextensionsv1.ClusterScoped:
	default:
		errs = append(errs, field.NotSupported(spec.Child("scope"), c.Spec.Scope, []string{string(apiextensionsv1.ClusterScoped), string(apiextensionsv1.NamespaceScoped)}))
	}
	if len(c.Spec.Versions) == 0 {
		errs = append(errs, field.Invalid(spec.Child("versions"), c.Spec.Versions, "must have exactly one version marked as storage version"))
	}
	storage, seen := 0, map[string]bool{}
	for i, v := range c.Spec.Versions {
		vp := spec.Child("versions").Index(i)
		if v.Storage {
			storage++
		}
		if seen[v.Name] {
			errs = append(errs, field.Invalid(vp.Child("name"), v.Name, "must appear only once"))
		}
		seen[v.Name] = true
		if msgs := validation.IsDNS1035Label(v.Name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(vp.Child("name"), v.Name, strings.Join(msgs, ",")))
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			errs = append(errs, field.Required(vp.Child("schema", "openAPIV3Schema"), "schemas are required"))
		} else if v.Schema.OpenAPIV3Schema.Type != "object" {
			errs = append(errs, field.Invalid(vp.Child("schema", "openAPIV3Schema", "type"), v.Schema.OpenAPIV3Schema.Type, `must be object at the root`))
		}
		if sc := v.Subresources; sc != nil && sc.Scale != nil {
			if !strings.HasPrefix(sc.Scale.SpecReplicasPath, ".spec.") {
				errs = append(errs, field.Invalid(vp.Child("subresources", "scale", "specReplicasPath"), sc.Scale.SpecReplicasPath, "should be a json path under .spec"))
			}
			if !strings.HasPrefix(sc.Scale.StatusReplicasPath, ".status.") {
				errs = append(errs, field.Invalid(vp.Child("subresources", "scale", "statusReplicasPath"), sc.Scale.StatusReplicasPath, "should be a json path under .status"))
			}
		}
	}
	if len(c.Spec.Versions) > 0 && storage != 1 {
		errs = append(errs, field.Invalid(spec.Child("versions"), fmt.Sprintf("%d storage versions", storage), "must have exactly one version marked as storage version"))
	}
	return errs
}
