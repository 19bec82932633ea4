package validation

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The checks in this file are Kubernetes' rules for matchLabelKeys and
// mismatchLabelKeys, the lists of the pod's own label keys that narrow a pod
// (anti-)affinity term or a topology spread constraint to pods like it.
//
// A pod (anti-)affinity term's keys are merged into its label selector when
// the pod is created (registry's pod create hook), before these checks run,
// so the checks see the selector as it is stored, on create and on every
// later update alike. The merge adds exactly one "key In (value)" per
// matchLabelKeys entry, which is what the rule about keys also in the
// selector allows: only a second requirement on such a key is refused. A pod
// stored before the merge (keys not in its selector) passes for the same
// reason.

// validatePodSpecLabelKeys checks the label key lists of every pod
// (anti-)affinity term and every topology spread constraint of s.
func validatePodSpecLabelKeys(s *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	eachPodAffinityTerm(s.Affinity, fldPath.Child("affinity"), func(term *corev1.PodAffinityTerm, p *field.Path) {
		errs = append(errs, validateAffinityLabelKeys(term, p)...)
	})
	spreadPath := fldPath.Child("topologySpreadConstraints")
	for i := range s.TopologySpreadConstraints {
		c := &s.TopologySpreadConstraints[i]
		errs = append(errs, validateSpreadMatchLabelKeys(c.MatchLabelKeys, c.LabelSelector, spreadPath.Index(i).Child("matchLabelKeys"))...)
	}
	return errs
}

// eachPodAffinityTerm calls fn with every pod affinity and anti-affinity
// term of a and its path: required terms are list entries, preferred ones
// sit in a weighted entry's podAffinityTerm.
func eachPodAffinityTerm(a *corev1.Affinity, fldPath *field.Path, fn func(term *corev1.PodAffinityTerm, p *field.Path)) {
	if a == nil {
		return
	}
	each := func(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, p *field.Path) {
		for i := range required {
			fn(&required[i], p.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))
		}
		for i := range preferred {
			fn(&preferred[i].PodAffinityTerm, p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i).Child("podAffinityTerm"))
		}
	}
	if pa := a.PodAffinity; pa != nil {
		each(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, fldPath.Child("podAffinity"))
	}
	if pa := a.PodAntiAffinity; pa != nil {
		each(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, fldPath.Child("podAntiAffinity"))
	}
}

// validateAffinityLabelKeys: both key lists need a label selector (without
// one the term selects no pod, and there is nothing to narrow) and hold
// label keys; no key is in both lists (a pod would have to match and
// mismatch its own value); and a matchLabelKeys key is not also required
// by the user's selector, which would have the term demand two things of
// one label. The last is seen in the merged selector as a second
// requirement on the key; a mismatchLabelKeys key may share the selector,
// as "NotIn" only narrows it further.
func validateAffinityLabelKeys(term *corev1.PodAffinityTerm, fldPath *field.Path) field.ErrorList {
	errs := validateLabelKeyList(term.MatchLabelKeys, term.LabelSelector, fldPath.Child("matchLabelKeys"))
	errs = append(errs, validateLabelKeyList(term.MismatchLabelKeys, term.LabelSelector, fldPath.Child("mismatchLabelKeys"))...)
	errs = append(errs, validateMatchLabelKeysNotInSelector(term.MatchLabelKeys, term.LabelSelector, fldPath)...)
	mismatch := sets.New(term.MismatchLabelKeys...)
	for i, key := range term.MatchLabelKeys {
		if mismatch.Has(key) {
			errs = append(errs, field.Invalid(fldPath.Child("matchLabelKeys").Index(i), key, "exists in both matchLabelKeys and mismatchLabelKeys"))
		}
	}
	return errs
}

// validateLabelKeyList: a key list is refused whole when there is no
// selector, and otherwise each key must be a label key.
func validateLabelKeyList(keys []string, selector *metav1.LabelSelector, fldPath *field.Path) field.ErrorList {
	if len(keys) == 0 {
		return nil
	}
	if selector == nil {
		return field.ErrorList{field.Forbidden(fldPath, "must not be specified when labelSelector is not set")}
	}
	var errs field.ErrorList
	for i, key := range keys {
		errs = append(errs, validateLabelName(key, fldPath.Index(i))...)
	}
	return errs
}

// validateMatchLabelKeysNotInSelector refuses a matchLabelKeys key that a
// match expression requires after matchLabels or an earlier expression
// already did: the merge's own requirement is the one allowed. As in
// Kubernetes, the error's path is the term's path indexed by the key's last
// position in matchLabelKeys (kubectl shows the same field).
func validateMatchLabelKeysNotInSelector(keys []string, selector *metav1.LabelSelector, termPath *field.Path) field.ErrorList {
	if selector == nil || len(keys) == 0 {
		return nil
	}
	position := make(map[string]int, len(keys))
	for i, key := range keys {
		position[key] = i
	}
	seen := sets.KeySet(selector.MatchLabels)
	var errs field.ErrorList
	for _, req := range selector.MatchExpressions {
		if i, ok := position[req.Key]; ok && seen.Has(req.Key) {
			errs = append(errs, field.Invalid(termPath.Index(i), req.Key, "exists in both matchLabelKeys and labelSelector"))
		}
		seen.Insert(req.Key)
	}
	return errs
}

// validateSpreadMatchLabelKeys: a topology spread constraint's
// matchLabelKeys are not merged into its selector (the scheduler applies
// them, until Kubernetes 1.34), so any key the selector names already is
// refused, and the keys need a selector.
func validateSpreadMatchLabelKeys(keys []string, selector *metav1.LabelSelector, fldPath *field.Path) field.ErrorList {
	if len(keys) == 0 {
		return nil
	}
	var errs field.ErrorList
	named := sets.New[string]()
	if selector == nil {
		errs = append(errs, field.Forbidden(fldPath, "must not be specified when labelSelector is not set"))
	} else {
		for key := range selector.MatchLabels {
			named.Insert(key)
		}
		for _, req := range selector.MatchExpressions {
			named.Insert(req.Key)
		}
	}
	for i, key := range keys {
		errs = append(errs, validateLabelName(key, fldPath.Index(i))...)
		if named.Has(key) {
			errs = append(errs, field.Invalid(fldPath.Index(i), key, "exists in both matchLabelKeys and labelSelector"))
		}
	}
	return errs
}
