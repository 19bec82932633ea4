package crd

import (
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiffkube/skiff/apiserver/registry"
)

// TableFactory builds the table converter of one version of a custom
// resource from its CRD (additionalPrinterColumns).
type TableFactory func(crd *apiextensionsv1.CustomResourceDefinition, version string) registry.TableConvertor

// customResources returns one registry entry per served version of crd.
func customResources(c *apiextensionsv1.CustomResourceDefinition, tables TableFactory) []*registry.Resource {
	var out []*registry.Resource
	namespaced := c.Spec.Scope == apiextensionsv1.NamespaceScoped
	for _, v := range c.Spec.Versions {
		if !v.Served {
			continue
		}
		var schema *apiextensionsv1.JSONSchemaProps
		if v.Schema != nil {
			schema = v.Schema.OpenAPIV3Schema
		}
		hasStatus := v.Subresources != nil && v.Subresources.Status != nil
		r := &registry.Resource{
			Group: c.Spec.Group, Version: v.Name, Name: c.Spec.Names.Plural, Singular: c.Spec.Names.Singular,
			Kind: c.Spec.Names.Kind, ListKind: c.Spec.Names.ListKind, Namespaced: namespaced,
			ShortNames: c.Spec.Names.ShortNames, Categories: c.Spec.Names.Categories,
			Strategy: &customStrategy{
				DefaultStrategy: registry.DefaultStrategy{Namespaced: namespaced, HasStatus: hasStatus, Generation: true, RequireResourceVersion: true},
				schema:          schema,
			},
			Subresources: registry.Subresources{Status: hasStatus},
			NoProtobuf:   true,
		}
		if v.Subresources != nil && v.Subresources.Scale != nil {
			sc := v.Subresources.Scale
			r.Subresources.Scale = &registry.ScalePaths{
				SpecReplicas:   strings.TrimPrefix(sc.SpecReplicasPath, "."),
				StatusReplicas: strings.TrimPrefix(sc.StatusReplicasPath, "."),
			}
			if sc.LabelSelectorPath != nil {
				r.Subresources.Scale.LabelSelector = strings.TrimPrefix(*sc.LabelSelectorPath, ".")
			}
		}
		for _, f := range v.SelectableFields {
			r.SelectableFields = append(r.SelectableFields, strings.TrimPrefix(f.JSONPath, "."))
		}
		if tables != nil {
			r.Table = tables(c, v.Name)
		}
		out = append(out, r)
	}
	return out
}

// customStrategy is DefaultStrategy plus the version's structural schema:
// unknown fields are pruned (reported per fieldValidation), defaults
// applied, and values validated.
type customStrategy struct {
	registry.DefaultStrategy
	schema *apiextensionsv1.JSONSchemaProps
}

func (s *customStrategy) PrepareForCreate(obj runtime.Object) {
	s.DefaultStrategy.PrepareForCreate(obj)
	applyDefaults(obj, s.schema)
}

func (s *customStrategy) PrepareForUpdate(obj, old runtime.Object) {
	s.DefaultStrategy.PrepareForUpdate(obj, old)
	applyDefaults(obj, s.schema)
}

func (s *customStrategy) Validate(obj runtime.Object) field.ErrorList {
	return append(s.DefaultStrategy.Validate(obj), validateObject(obj, s.schema)...)
}

func (s *customStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return append(s.DefaultStrategy.ValidateUpdate(obj, old), validateObject(obj, s.schema)...)
}

// StatusStrategy is the status endpoint's: DefaultStrategy's (everything
// but status stays as stored) with the version's schema, so that a status
// write is defaulted and validated as a write of the whole object is (as
// Kubernetes validates the whole custom resource on a status update).
// Unknown fields are pruned by PruneUnknown, which serves both endpoints.
func (s *customStrategy) StatusStrategy() registry.Strategy {
	return &customStatusStrategy{Strategy: s.DefaultStrategy.StatusStrategy(), schema: s.schema}
}

type customStatusStrategy struct {
	registry.Strategy
	schema *apiextensionsv1.JSONSchemaProps
}

func (s *customStatusStrategy) PrepareForUpdate(obj, old runtime.Object) {
	s.Strategy.PrepareForUpdate(obj, old)
	applyDefaults(obj, s.schema)
}

func (s *customStatusStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return append(s.Strategy.ValidateUpdate(obj, old), validateObject(obj, s.schema)...)
}

// OpenAPIV3Schema is the version's schema, which discovery serves in the
// OpenAPI v3 document for kubectl explain.
func (s *customStrategy) OpenAPIV3Schema() *apiextensionsv1.JSONSchemaProps { return s.schema }

// PruneUnknown implements registry.UnknownFieldPruner.
func (s *customStrategy) PruneUnknown(obj runtime.Object) []string {
	return pruneObject(obj, s.schema)
}
