package admission

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// Kubernetes' RuntimeClass admission plugin, for a cluster with no
// RuntimeClasses: skiff does not serve node.k8s.io, so none can exist, and
// every class a pod names is missing. Upstream refuses a pod naming a
// missing class when it is created (its mutating half, after the
// ServiceAccount, Priority and DefaultTolerationSeconds plugins and before
// validation), and a pod setting spec.overhead without a class that
// defines one (its validating half, after Pod Security and before quota).
// Updates are not looked at (both fields are immutable), nor are
// subresources or workload templates. A pod naming a class was stored and
// run with the default handler: less isolation than it asked for.

// podRuntimeClass refuses a pod created with a runtimeClassName, in the
// plugin's words: 403 `pods "x" is forbidden: pod rejected: RuntimeClass
// "gvisor" not found`. An empty name is left to validation (422: not a
// DNS subdomain), where upstream's live lookup of "" fails with a 500.
func (c *Chain) podRuntimeClass(_ context.Context, a *Attributes) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok || a.Subresource != "" || pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName == "" {
		return nil
	}
	return forbidden(a, "pod rejected: RuntimeClass %q not found", *pod.Spec.RuntimeClassName)
}

// podOverhead refuses a pod created with spec.overhead (set, even empty):
// only a RuntimeClass defines a pod's overhead, and there is none.
func (c *Chain) podOverhead(a *Attributes) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok || a.Subresource != "" || pod.Spec.Overhead == nil {
		return nil
	}
	return forbidden(a, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
}
