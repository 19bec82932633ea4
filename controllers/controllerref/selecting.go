package controllerref

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Selecting returns the owners, from list (a namespaced lister's List), whose
// label selector matches an orphan's labels: the owners that may adopt it, and
// so the ones to wake when an orphan appears or changes. As in Kubernetes, an
// owner whose selector is invalid or empty matches nothing: an empty selector
// would select every object in the namespace, and validation refuses it for
// every kind that adopts.
func Selecting[T any](list func(labels.Selector) ([]T, error), selectorOf func(T) *metav1.LabelSelector, orphanLabels map[string]string) []T {
	owners, err := list(labels.Everything())
	if err != nil {
		return nil
	}
	var out []T
	for _, owner := range owners {
		sel, err := metav1.LabelSelectorAsSelector(selectorOf(owner))
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(orphanLabels)) {
			out = append(out, owner)
		}
	}
	return out
}
