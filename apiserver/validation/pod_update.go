package validation

import (
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// updatablePodSpecFields is Kubernetes' list, quoted in its error message.
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

// validatePodUpdate enforces that a pod's spec is fixed once created except
// for the few fields Kubernetes lets users change on a running pod.
func validatePodUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	specPath := field.NewPath("spec")
	errs := validatePodDeletionCost(newPod.Annotations, oldPod.Annotations, field.NewPath("metadata", "annotations"))

	if len(newPod.Spec.Containers) != len(oldPod.Spec.Containers) {
		return append(errs, field.Forbidden(specPath.Child("containers"), "pod updates may not add or remove containers"))
	}
	if len(newPod.Spec.InitContainers) != len(oldPod.Spec.InitContainers) {
		return append(errs, field.Forbidden(specPath.Child("initContainers"), "pod updates may not add or remove containers"))
	}

	if newPod.Spec.ActiveDeadlineSeconds != nil {
		v := *newPod.Spec.ActiveDeadlineSeconds
		if v < 0 || v > math.MaxInt32 {
			return append(errs, field.Invalid(specPath.Child("activeDeadlineSeconds"), v, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
		if oldPod.Spec.ActiveDeadlineSeconds != nil && *oldPod.Spec.ActiveDeadlineSeconds < v {
			return append(errs, field.Invalid(specPath.Child("activeDeadlineSeconds"), v, "must be less than or equal to previous value"))
		}
	} else if oldPod.Spec.ActiveDeadlineSeconds != nil {
		return append(errs, field.Invalid(specPath.Child("activeDeadlineSeconds"), newPod.Spec.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
	}

	errs = append(errs, validateOnlyAddedTolerations(newPod.Spec.Tolerations, oldPod.Spec.Tolerations, specPath.Child("tolerations"))...)

	// Copy the mutable fields from the new spec onto the old one: whatever
	// difference remains is a change to an immutable field.
	munged := oldPod.Spec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = newPod.Spec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = newPod.Spec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = newPod.Spec.ActiveDeadlineSeconds
	munged.Tolerations = newPod.Spec.Tolerations
	// Ephemeral containers change only through their own subresource.
	munged.EphemeralContainers = newPod.Spec.EphemeralContainers
	// Scheduling gates may only be removed, which lets a gated pod proceed.
	if isSubset(newPod.Spec.SchedulingGates, oldPod.Spec.SchedulingGates) {
		munged.SchedulingGates = newPod.Spec.SchedulingGates
	}
	if old := oldPod.Spec.TerminationGracePeriodSeconds; old != nil && *old < 0 {
		if n := newPod.Spec.TerminationGracePeriodSeconds; n != nil && *n == 1 {
			munged.TerminationGracePeriodSeconds = n
		}
	}
	if !equality.Semantic.DeepEqual(*munged, newPod.Spec) {
		specDiff := diff.Diff(oldPod.Spec, newPod.Spec)
		errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("pod updates may not change fields other than %s\n%v",
			strings.Join(updatablePodSpecFields, ","), specDiff)))
	}
	return errs
}

func isSubset(newGates, oldGates []corev1.PodSchedulingGate) bool {
	old := make(map[string]bool, len(oldGates))
	for _, g := range oldGates {
		old[g.Name] = true
	}
	for _, g := range newGates {
		if !old[g.Name] {
			return false
		}
	}
	return true
}

// validateOnlyAddedTolerations lets a running pod gain tolerations (so taint
// based eviction can extend its stay) but not lose or alter existing ones.
func validateOnlyAddedTolerations(newTols, oldTols []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, old := range oldTols {
		found := false
		oldCopy := old
		oldCopy.TolerationSeconds = nil
		for _, n := range newTols {
			nCopy := n
			nCopy.TolerationSeconds = nil
			if equality.Semantic.DeepEqual(oldCopy, nCopy) {
				found = true
				break
			}
		}
		if !found {
			errs = append(errs, field.Forbidden(fldPath, "existing toleration can not be modified except its tolerationSeconds"))
			return errs
		}
	}
	return errs
}
