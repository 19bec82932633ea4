package apiserver

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiffkube/skiff/apiserver/crd"
	"github.com/skiffkube/skiff/apiserver/defaulting"
	"github.com/skiffkube/skiff/apiserver/registry"
	"github.com/skiffkube/skiff/apiserver/tables"
	"github.com/skiffkube/skiff/apiserver/validation"
)

// KindHooks are the per-kind defaulting and validation of built-in kinds
// (packages defaulting and validation).
func KindHooks() registry.Hooks {
	return registry.Hooks{
		Default:        defaulting.Default,
		Validate:       validation.ValidateContent,
		ValidateUpdate: validation.ValidateContentUpdate,
		// A status update keeps the stored spec: a kind with rules of its
		// own for status (pods) does not check the spec again.
		ValidateStatusUpdate: validation.ValidateStatusUpdate,
	}
}

// KindTables converts built-in kinds to kubectl's tables (package tables).
func KindTables(obj runtime.Object, include metav1.IncludeObjectPolicy) (*metav1.Table, error) {
	return tables.ConvertToTable(obj, tables.Options{IncludeObject: include})
}

// CustomTables builds a custom resource version's table from its CRD's
// additionalPrinterColumns.
func CustomTables(c *apiextensionsv1.CustomResourceDefinition, version string) registry.TableConvertor {
	conv, err := tables.ForCRDVersion(c, version)
	if err != nil {
		return nil
	}
	return func(obj runtime.Object, include metav1.IncludeObjectPolicy) (*metav1.Table, error) {
		return conv.ConvertToTable(obj, tables.Options{IncludeObject: include})
	}
}

var _ crd.TableFactory = CustomTables
