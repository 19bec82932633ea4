package validation

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const selectorMismatch = "`selector` does not match template `labels`"

func nonNegative(v int64, fldPath *field.Path) field.ErrorList {
	return apivalidation.ValidateNonnegativeField(v, fldPath)
}

func replicas(r *int32, fldPath *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	return nonNegative(int64(*r), fldPath)
}

// validateSelector checks a workload's selector: present, well formed, not
// empty (an empty selector would adopt every pod in the namespace).
func validateSelector(sel *metav1.LabelSelector, kind string, fldPath *field.Path) field.ErrorList {
	if sel == nil {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, fldPath)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(fldPath, sel, "empty selector is invalid for "+kind))
	}
	return errs
}

// validateTemplateForSelector checks that the template's pods would be
// selected by their controller, then the template itself. A nil selector
// selects nothing, so its template never matches, as in Kubernetes.
func validateTemplateForSelector(sel *metav1.LabelSelector, t *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		// The selector check reports the bad selector itself.
		return append(errs, validatePodTemplateSpec(t, fldPath)...)
	}
	if !selector.Empty() && !selector.Matches(labels.Set(t.Labels)) {
		errs = append(errs, field.Invalid(fldPath.Child("metadata", "labels"), t.Labels, selectorMismatch))
	}
	return append(errs, validatePodTemplateSpec(t, fldPath)...)
}

// requireAlwaysRestart: pods of long-running controllers restart forever and
// never have a deadline.
func requireAlwaysRestart(t *corev1.PodTemplateSpec, kind string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(fldPath.Child("spec", "restartPolicy"), t.Spec.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in "+kind+" is not Supported"))
	}
	return errs
}

func validateDeployment(d *appsv1.Deployment) field.ErrorList {
	s := &d.Spec
	specPath := field.NewPath("spec")
	errs := replicas(s.Replicas, specPath.Child("replicas"))
	errs = append(errs, validateSelector(s.Selector, "deployment", specPath.Child("selector"))...)
	errs = append(errs, validateTemplateForSelector(s.Selector, &s.Template, specPath.Child("template"))...)
	errs = append(errs, requireAlwaysRestart(&s.Template, "ReplicaSet", specPath.Child("template"))...)

	strategyPath := specPath.Child("strategy")
	switch s.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.Strategy.RollingUpdate != nil {
			errs = append(errs, field.Forbidden(strategyPath.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		if s.Strategy.RollingUpdate == nil {
			errs = append(errs, field.Required(strategyPath.Child("rollingUpdate"), "this should be defaulted and never be nil"))
		} else {
			ru := s.Strategy.RollingUpdate
			errs = append(errs, validateRollingParams(ru.MaxUnavailable, ru.MaxSurge, strategyPath.Child("rollingUpdate"))...)
		}
	default:
		errs = append(errs, field.NotSupported(strategyPath.Child("type"), s.Strategy.Type,
			[]appsv1.DeploymentStrategyType{appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType}))
	}

	errs = append(errs, nonNegative(int64(s.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	if s.RevisionHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*s.RevisionHistoryLimit), specPath.Child("revisionHistoryLimit"))...)
	}
	if s.ProgressDeadlineSeconds != nil {
		errs = append(errs, nonNegative(int64(*s.ProgressDeadlineSeconds), specPath.Child("progressDeadlineSeconds"))...)
		if *s.ProgressDeadlineSeconds <= s.MinReadySeconds {
			errs = append(errs, field.Invalid(specPath.Child("progressDeadlineSeconds"), *s.ProgressDeadlineSeconds, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

// validateRollingParams checks maxUnavailable/maxSurge: each a non-negative
// count or percentage, maxUnavailable at most 100%, and not both zero (a
// rollout could then never make progress).
func validateRollingParams(maxUnavailable, maxSurge *intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validatePositiveIntOrPercent(maxUnavailable, fldPath.Child("maxUnavailable"))...)
	errs = append(errs, validatePositiveIntOrPercent(maxSurge, fldPath.Child("maxSurge"))...)
	if intOrPercentValue(maxUnavailable) == 0 && intOrPercentValue(maxSurge) == 0 {
		errs = append(errs, field.Invalid(fldPath.Child("maxUnavailable"), intOrStringValue(maxUnavailable), "may not be 0 when `maxSurge` is 0"))
	}
	if maxUnavailable != nil && maxUnavailable.Type == intstr.String && intOrPercentValue(maxUnavailable) > 100 {
		errs = append(errs, field.Invalid(fldPath.Child("maxUnavailable"), maxUnavailable.StrVal, "must not be greater than 100%"))
	}
	return errs
}

// intOrStringValue gives field errors the plain value (0 or "0%") rather
// than the IntOrString struct.
func intOrStringValue(v *intstr.IntOrString) any {
	if v == nil {
		return nil
	}
	if v.Type == intstr.String {
		return v.StrVal
	}
	return int64(v.IntVal)
}

func validatePositiveIntOrPercent(v *intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if v == nil {
		return nil
	}
	switch v.Type {
	case intstr.String:
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(fldPath, v.StrVal, msg))
		}
	case intstr.Int:
		errs = append(errs, nonNegative(int64(v.IntValue()), fldPath)...)
	}
	return errs
}

func intOrPercentValue(v *intstr.IntOrString) int {
	if v == nil {
		return 0
	}
	if v.Type == intstr.Int {
		return v.IntValue()
	}
	n, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	if err != nil {
		return -1 // malformed; reported by validatePositiveIntOrPercent
	}
	return n
}

func validateDeploymentUpdate(newD, oldD *appsv1.Deployment) field.ErrorList {
	return immutableSelector(newD.Spec.Selector, oldD.Spec.Selector)
}

// immutableSelector: apps/v1 fixed workload selectors, because changing one
// would orphan the running pods or adopt someone else's.
func immutableSelector(newSel, oldSel *metav1.LabelSelector) field.ErrorList {
	return apivalidation.ValidateImmutableField(newSel, oldSel, field.NewPath("spec", "selector"))
}

func validateReplicaSet(rs *appsv1.ReplicaSet) field.ErrorList {
	s := &rs.Spec
	specPath := field.NewPath("spec")
	errs := replicas(s.Replicas, specPath.Child("replicas"))
	errs = append(errs, nonNegative(int64(s.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	errs = append(errs, validateSelector(s.Selector, "deployment", specPath.Child("selector"))...)
	errs = append(errs, validateTemplateForSelector(s.Selector, &s.Template, specPath.Child("template"))...)
	errs = append(errs, requireAlwaysRestart(&s.Template, "ReplicaSet", specPath.Child("template"))...)
	return errs
}

func validateReplicaSetUpdate(newRS, oldRS *appsv1.ReplicaSet) field.ErrorList {
	return immutableSelector(newRS.Spec.Selector, oldRS.Spec.Selector)
}

// validateReplicationController is Kubernetes' ValidateReplicationControllerSpec:
// a non-empty selector (a map of labels; an empty one would own every pod in
// the namespace) that the template's labels match, and a template that
// exists, as defaulting fills the selector from it but cannot invent one.
func validateReplicationController(rc *corev1.ReplicationController) field.ErrorList {
	s := &rc.Spec
	specPath := field.NewPath("spec")
	errs := nonNegative(int64(s.MinReadySeconds), specPath.Child("minReadySeconds"))
	if len(s.Selector) == 0 {
		errs = append(errs, field.Required(specPath.Child("selector"), ""))
	}
	errs = append(errs, replicas(s.Replicas, specPath.Child("replicas"))...)
	tplPath := specPath.Child("template")
	if s.Template == nil {
		return append(errs, field.Required(tplPath, ""))
	}
	if len(s.Selector) > 0 && !labels.SelectorFromSet(s.Selector).Matches(labels.Set(s.Template.Labels)) {
		errs = append(errs, field.Invalid(tplPath.Child("metadata", "labels"), s.Template.Labels, selectorMismatch))
	}
	errs = append(errs, validatePodTemplateSpec(s.Template, tplPath)...)
	if s.Replicas != nil && *s.Replicas > 1 {
		errs = append(errs, readOnlyPersistentDisks(s.Template.Spec.Volumes, tplPath.Child("spec", "volumes"))...)
	}
	return append(errs, requireAlwaysRestart(s.Template, "ReplicationController", tplPath)...)
}

// readOnlyPersistentDisks is Kubernetes' ValidateReadOnlyPersistentDisks,
// which only ReplicationControllers of more than one replica apply: a GCE
// persistent disk attaches read-write to one machine only.
func readOnlyPersistentDisks(volumes []corev1.Volume, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range volumes {
		if pd := volumes[i].GCEPersistentDisk; pd != nil && !pd.ReadOnly {
			errs = append(errs, field.Invalid(path.Index(i).Child("gcePersistentDisk", "readOnly"), false,
				"must be true for replicated pods > 1; GCE PD can only be mounted on multiple machines if it is read-only"))
		}
	}
	return errs
}

func validateDaemonSet(ds *appsv1.DaemonSet) field.ErrorList {
	s := &ds.Spec
	specPath := field.NewPath("spec")
	errs := validateSelector(s.Selector, "daemonset", specPath.Child("selector"))
	errs = append(errs, validateTemplateForSelector(s.Selector, &s.Template, specPath.Child("template"))...)
	errs = append(errs, requireAlwaysRestart(&s.Template, "DaemonSet", specPath.Child("template"))...)
	errs = append(errs, nonNegative(int64(s.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	if s.RevisionHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*s.RevisionHistoryLimit), specPath.Child("revisionHistoryLimit"))...)
	}
	strategyPath := specPath.Child("updateStrategy")
	switch s.UpdateStrategy.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
	case appsv1.RollingUpdateDaemonSetStrategyType:
		if s.UpdateStrategy.RollingUpdate == nil {
			errs = append(errs, field.Required(strategyPath.Child("rollingUpdate"), ""))
		} else {
			ru := s.UpdateStrategy.RollingUpdate
			errs = append(errs, validateRollingParams(ru.MaxUnavailable, ru.MaxSurge, strategyPath.Child("rollingUpdate"))...)
		}
	default:
		errs = append(errs, field.NotSupported(strategyPath.Child("type"), s.UpdateStrategy.Type,
			[]appsv1.DaemonSetUpdateStrategyType{appsv1.RollingUpdateDaemonSetStrategyType, appsv1.OnDeleteDaemonSetStrategyType}))
	}
	return errs
}

func validateDaemonSetUpdate(newDS, oldDS *appsv1.DaemonSet) field.ErrorList {
	return immutableSelector(newDS.Spec.Selector, oldDS.Spec.Selector)
}

func validateStatefulSet(ss *appsv1.StatefulSet) field.ErrorList {
	s := &ss.Spec
	specPath := field.NewPath("spec")
	var errs field.ErrorList

	switch s.PodManagementPolicy {
	case "":
		errs = append(errs, field.Required(specPath.Child("podManagementPolicy"), ""))
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		errs = append(errs, field.Invalid(specPath.Child("podManagementPolicy"), s.PodManagementPolicy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)))
	}

	strategyPath := specPath.Child("updateStrategy")
	switch s.UpdateStrategy.Type {
	case "":
		errs = append(errs, field.Required(strategyPath, ""))
	case appsv1.OnDeleteStatefulSetStrategyType:
		if s.UpdateStrategy.RollingUpdate != nil {
			errs = append(errs, field.Invalid(strategyPath.Child("rollingUpdate"), s.UpdateStrategy.RollingUpdate,
				fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType)))
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if ru := s.UpdateStrategy.RollingUpdate; ru != nil {
			if ru.Partition != nil {
				errs = append(errs, nonNegative(int64(*ru.Partition), strategyPath.Child("rollingUpdate", "partition"))...)
			}
			if ru.MaxUnavailable != nil {
				errs = append(errs, validatePositiveIntOrPercent(ru.MaxUnavailable, strategyPath.Child("rollingUpdate", "maxUnavailable"))...)
				if intOrPercentValue(ru.MaxUnavailable) == 0 {
					errs = append(errs, field.Invalid(strategyPath.Child("rollingUpdate", "maxUnavailable"), intOrStringValue(ru.MaxUnavailable), "cannot be 0"))
				}
			}
		}
	default:
		errs = append(errs, field.Invalid(strategyPath, s.UpdateStrategy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType)))
	}

	if p := s.PersistentVolumeClaimRetentionPolicy; p != nil {
		pp := specPath.Child("persistentVolumeClaimRetentionPolicy")
		valid := []appsv1.PersistentVolumeClaimRetentionPolicyType{appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
		for _, f := range []struct {
			name string
			v    appsv1.PersistentVolumeClaimRetentionPolicyType
		}{{"whenDeleted", p.WhenDeleted}, {"whenScaled", p.WhenScaled}} {
			if f.v != appsv1.RetainPersistentVolumeClaimRetentionPolicyType && f.v != appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
				errs = append(errs, field.NotSupported(pp.Child(f.name), f.v, valid))
			}
		}
	}

	errs = append(errs, replicas(s.Replicas, specPath.Child("replicas"))...)
	errs = append(errs, nonNegative(int64(s.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	if s.Ordinals != nil {
		errs = append(errs, nonNegative(int64(s.Ordinals.Start), specPath.Child("ordinals", "start"))...)
	}
	if s.ServiceName != "" {
		for _, msg := range apivalidation.NameIsDNS1035Label(s.ServiceName, false) {
			errs = append(errs, field.Invalid(specPath.Child("serviceName"), s.ServiceName, msg))
		}
	}
	errs = append(errs, validateSelector(s.Selector, "statefulset", specPath.Child("selector"))...)
	errs = append(errs, validateTemplateForSelector(s.Selector, withClaimVolumes(&s.Template, s.VolumeClaimTemplates), specPath.Child("template"))...)
	errs = append(errs, requireAlwaysRestart(&s.Template, "StatefulSet", specPath.Child("template"))...)
	for i, pvc := range s.VolumeClaimTemplates {
		p := specPath.Child("volumeClaimTemplates").Index(i)
		for _, msg := range apivalidation.NameIsDNSSubdomain(pvc.Name, false) {
			errs = append(errs, field.Invalid(p.Child("metadata", "name"), pvc.Name, msg))
		}
		if len(pvc.Spec.AccessModes) == 0 {
			errs = append(errs, field.Required(p.Child("spec", "accessModes"), "at least 1 access mode is required"))
		}
	}
	return errs
}

// withClaimVolumes returns the template as the controller makes its pods:
// each volumeClaimTemplate is a persistentVolumeClaim volume of its name, so
// containers may mount it.
func withClaimVolumes(t *corev1.PodTemplateSpec, claims []corev1.PersistentVolumeClaim) *corev1.PodTemplateSpec {
	if len(claims) == 0 {
		return t
	}
	out := t.DeepCopy()
	for _, c := range claims {
		src := corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name}}
		replaced := false
		for i := range out.Spec.Volumes {
			if out.Spec.Volumes[i].Name == c.Name {
				out.Spec.Volumes[i].VolumeSource, replaced = src, true
			}
		}
		if !replaced {
			out.Spec.Volumes = append(out.Spec.Volumes, corev1.Volume{Name: c.Name, VolumeSource: src})
		}
	}
	return out
}

// validateStatefulSetUpdate: everything but these fields is fixed, because a
// StatefulSet's identity (service, claims, selector) is baked into its pods
// and volumes.
func validateStatefulSetUpdate(newSS, oldSS *appsv1.StatefulSet) field.ErrorList {
	munged := oldSS.Spec.DeepCopy()
	munged.Replicas = newSS.Spec.Replicas
	munged.Ordinals = newSS.Spec.Ordinals
	munged.Template = newSS.Spec.Template
	munged.UpdateStrategy = newSS.Spec.UpdateStrategy
	munged.MinReadySeconds = newSS.Spec.MinReadySeconds
	munged.PersistentVolumeClaimRetentionPolicy = newSS.Spec.PersistentVolumeClaimRetentionPolicy
	munged.RevisionHistoryLimit = newSS.Spec.RevisionHistoryLimit
	// Claim templates may change only in metadata/status that never reaches
	// the claims already made; compare their specs only.
	if len(munged.VolumeClaimTemplates) == len(newSS.Spec.VolumeClaimTemplates) {
		for i := range munged.VolumeClaimTemplates {
			munged.VolumeClaimTemplates[i].Status = newSS.Spec.VolumeClaimTemplates[i].Status
		}
	}
	if !equality.Semantic.DeepEqual(*munged, newSS.Spec) {
		return field.ErrorList{field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")}
	}
	return nil
}
