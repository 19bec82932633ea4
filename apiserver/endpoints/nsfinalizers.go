package endpoints

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

type typesUID = types.UID

// namespaceSpecFinalizers counts a namespace's spec.finalizers (0 for
// every other kind).
func namespaceSpecFinalizers(obj runtime.Object) int {
	if ns, ok := obj.(*corev1.Namespace); ok {
		return len(ns.Spec.Finalizers)
	}
	return 0
}
