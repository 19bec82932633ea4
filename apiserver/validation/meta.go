package validation

import (
	"slices"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// metaUpdate applies Kubernetes' metadata update rules. An empty
// resourceVersion means an unconditional update, which the API server resolves
// against the stored object before validation, so the stored version stands
// in for it here.
func metaUpdate(newMeta, oldMeta metav1.Object) field.ErrorList {
	if newMeta.GetResourceVersion() == "" && oldMeta.GetResourceVersion() != "" {
		// Validate a shallow copy; never change the caller's object.
		m := &metav1.ObjectMeta{}
		copyMeta(m, newMeta)
		m.ResourceVersion = oldMeta.GetResourceVersion()
		newMeta = m
	}
	return apivalidation.ValidateObjectMetaAccessorUpdate(newMeta, oldMeta, field.NewPath("metadata"))
}

func copyMeta(dst *metav1.ObjectMeta, src metav1.Object) {
	dst.Name = src.GetName()
	dst.GenerateName = src.GetGenerateName()
	dst.Namespace = src.GetNamespace()
	dst.UID = src.GetUID()
	dst.ResourceVersion = src.GetResourceVersion()
	dst.Generation = src.GetGeneration()
	dst.CreationTimestamp = src.GetCreationTimestamp()
	dst.DeletionTimestamp = src.GetDeletionTimestamp()
	dst.DeletionGracePeriodSeconds = src.GetDeletionGracePeriodSeconds()
	dst.Labels = src.GetLabels()
	dst.Annotations = src.GetAnnotations()
	dst.OwnerReferences = src.GetOwnerReferences()
	dst.Finalizers = src.GetFinalizers()
	dst.ManagedFields = src.GetManagedFields()
}

// sortedKeys returns a map's keys in order, so errors come out in a stable
// order whatever Go's map iteration does.
func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func validateLabelName(name string, fldPath *field.Path) field.ErrorList {
	return metav1validation.ValidateLabelName(name, fldPath)
}
