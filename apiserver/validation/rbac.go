package validation

import (
	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RBAC objects: rules must say what they allow, bindings must point at a
// role and name subjects of the kinds the authorizer understands.

func validateRole(r *rbacv1.Role) field.ErrorList {
	return validatePolicyRules(r.Rules, true)
}

func validateClusterRole(r *rbacv1.ClusterRole) field.ErrorList {
	errs := validatePolicyRules(r.Rules, false)
	if r.AggregationRule != nil {
		selPath := field.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(r.AggregationRule.ClusterRoleSelectors) == 0 {
			errs = append(errs, field.Required(selPath, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		for i := range r.AggregationRule.ClusterRoleSelectors {
			errs = append(errs, metav1validation.ValidateLabelSelector(&r.AggregationRule.ClusterRoleSelectors[i], metav1validation.LabelSelectorValidationOptions{}, selPath.Index(i))...)
		}
	}
	return errs
}

func validatePolicyRules(rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, rule := range rules {
		p := field.NewPath("rules").Index(i)
		if len(rule.Verbs) == 0 {
			errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
		}
		if len(rule.NonResourceURLs) > 0 {
			if namespaced {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			continue
		}
		if len(rule.APIGroups) == 0 {
			errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(rule.Resources) == 0 {
			errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
		}
	}
	return errs
}

func validateRoleBinding(rb *rbacv1.RoleBinding) field.ErrorList {
	return validateBinding(rb.RoleRef, rb.Subjects, true)
}

func validateClusterRoleBinding(rb *rbacv1.ClusterRoleBinding) field.ErrorList {
	return validateBinding(rb.RoleRef, rb.Subjects, false)
}

func validateBinding(ref rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	refPath := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(refPath.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	if namespaced {
		if ref.Kind != "Role" && ref.Kind != "ClusterRole" {
			errs = append(errs, field.NotSupported(refPath.Child("kind"), ref.Kind, []string{"Role", "ClusterRole"}))
		}
	} else if ref.Kind != "ClusterRole" {
		errs = append(errs, field.NotSupported(refPath.Child("kind"), ref.Kind, []string{"ClusterRole"}))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(refPath.Child("name"), ""))
	} else {
		for _, msg := range path.ValidatePathSegmentName(ref.Name, false) {
			errs = append(errs, field.Invalid(refPath.Child("name"), ref.Name, msg))
		}
	}
	for i, s := range subjects {
		errs = append(errs, validateSubject(s, namespaced, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

func validateSubject(s rbacv1.Subject, namespaced bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range apivalidation.NameIsDNSSubdomain(s.Name, false) {
				errs = append(errs, field.Invalid(fldPath.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(fldPath.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			errs = append(errs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}

// A binding's roleRef is fixed: changing which role a binding grants would
// silently change what its subjects may do; make a new binding instead.
func immutableRoleRef(newRef, oldRef rbacv1.RoleRef) field.ErrorList {
	if newRef != oldRef {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), newRef, "cannot change roleRef")}
	}
	return nil
}

func validateRoleBindingUpdate(n, o *rbacv1.RoleBinding) field.ErrorList {
	return immutableRoleRef(n.RoleRef, o.RoleRef)
}

func validateClusterRoleBindingUpdate(n, o *rbacv1.ClusterRoleBinding) field.ErrorList {
	return immutableRoleRef(n.RoleRef, o.RoleRef)
}
