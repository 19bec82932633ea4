// Package validation checks the objects users write against the rules
// Kubernetes enforces, and reports each problem as a field.Error with the same
// path, type and wording Kubernetes uses, so that kubectl prints the familiar
// `The Pod "x" is invalid: spec.containers[0].image: Required value`.
//
// The rules follow k8s.io/kubernetes pkg/apis/*/validation for the v1 types
// skiff stores. Validate expects an object that has been defaulted
// (package apiserver/defaulting) and whose namespace has been set from the
// request, exactly as Kubernetes validates after defaulting.
package validation
