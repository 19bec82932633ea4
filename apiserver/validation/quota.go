package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ResourceQuota, with Kubernetes' rules: resource names a quota knows,
// whole numbers for counted resources, and scopes that fit the resources
// they restrict.

// quotaScopeResources are the resources each scope may restrict: the
// pod-lifecycle scopes restrict the pod count and pod compute resources,
// BestEffort only the pod count (a best-effort pod asks for no compute).
// Scopes not listed restrict anything.
var quotaScopeResources = func() map[corev1.ResourceQuotaScope][]corev1.ResourceName {
	pods := []corev1.ResourceName{corev1.ResourcePods}
	compute := []corev1.ResourceName{corev1.ResourcePods, corev1.ResourceCPU, corev1.ResourceMemory,
		corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory}
	return map[corev1.ResourceQuotaScope][]corev1.ResourceName{
		corev1.ResourceQuotaScopeTerminating:               compute,
		corev1.ResourceQuotaScopeNotTerminating:            compute,
		corev1.ResourceQuotaScopeNotBestEffort:             compute,
		corev1.ResourceQuotaScopePriorityClass:             compute,
		corev1.ResourceQuotaScopeCrossNamespacePodAffinity: compute,
		corev1.ResourceQuotaScopeBestEffort:                pods,
	}
}()

// standardQuotaScope tells whether a scope is one Kubernetes v1.33 accepts
// by default. VolumeAttributesClass is left out: its feature gate
// (VolumeAttributesClass) is off by default in v1.33, and skiff matches no
// claim by it.
func standardQuotaScope(s corev1.ResourceQuotaScope) bool {
	_, ok := quotaScopeResources[s]
	return ok
}

// conflictingScopes are the pairs of scopes no object can match at once.
var conflictingScopes = [][2]corev1.ResourceQuotaScope{
	{corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort},
	{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating},
}

// standardQuotaResources are the unqualified names a quota may limit, with
// hugepages-<size> and requests.hugepages-<size>.
var standardQuotaResources = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsStorage, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
	corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets, corev1.ResourcePersistentVolumeClaims, corev1.ResourceConfigMaps,
	corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
}

// integerQuotaResources are the counts a quota must hold as whole numbers
// (besides qualified names such as count/<resource>, see integerQuotaResource).
var integerQuotaResources = []corev1.ResourceName{
	corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
	corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
}

func quotaHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) ||
		strings.HasPrefix(string(name), corev1.ResourceRequestsHugePagesPrefix)
}

func standardQuotaResource(name corev1.ResourceName) bool {
	return slices.Contains(standardQuotaResources, name) || quotaHugePages(name)
}

// standardResource is Kubernetes' wider list of unqualified resource
// names: the quota ones and storage.
func standardResource(name corev1.ResourceName) bool {
	return standardQuotaResource(name) || name == corev1.ResourceStorage
}

// integerQuotaResource tells whether a quota must hold name as a whole
// number: the object counts, and every domain-qualified name outside
// kubernetes.io that does not start with requests. (count/<resource>,
// <class>.storageclass.storage.k8s.io/…), which Kubernetes treats as an
// extended resource.
func integerQuotaResource(name corev1.ResourceName) bool {
	if slices.Contains(integerQuotaResources, name) {
		return true
	}
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) ||
		strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+s)) == 0
}

// validateQuotaResourceName checks a name a quota limits or reports: a
// qualified name, and if unqualified one Kubernetes knows, and one quota
// knows.
func validateQuotaResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	s := string(name)
	for _, msg := range validation.IsQualifiedName(s) {
		errs = append(errs, field.Invalid(fldPath, s, msg))
	}
	if strings.Contains(s, "/") {
		return errs
	}
	if len(errs) == 0 && !standardResource(name) {
		errs = append(errs, field.Invalid(fldPath, s, "must be a standard resource type or fully qualified"))
	}
	if !standardQuotaResource(name) {
		errs = append(errs, field.Invalid(fldPath, s, "must be a standard resource for quota"))
	}
	return errs
}

// validateQuotaQuantity: never negative, and whole for counted resources.
func validateQuotaQuantity(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	errs := validateQuantity(q, fldPath)
	if integerQuotaResource(name) && q.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(fldPath, q.String(), "must be an integer"))
	}
	return errs
}

func validateQuotaList(list corev1.ResourceList, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedKeys(list) {
		p := fldPath.Key(string(name))
		errs = append(errs, validateQuotaResourceName(name, p)...)
		errs = append(errs, validateQuotaQuantity(name, list[name], p)...)
	}
	return errs
}

func validateResourceQuota(rq *corev1.ResourceQuota) field.ErrorList {
	errs := validateResourceQuotaSpec(&rq.Spec, field.NewPath("spec"))
	return append(errs, validateResourceQuotaStatus(&rq.Status, field.NewPath("status"))...)
}

func validateResourceQuotaSpec(spec *corev1.ResourceQuotaSpec, fldPath *field.Path) field.ErrorList {
	errs := validateQuotaList(spec.Hard, fldPath.Child("hard"))
	errs = append(errs, validateQuotaScopes(spec, fldPath.Child("scopes"))...)
	if spec.ScopeSelector != nil {
		errs = append(errs, validateQuotaScopeSelector(spec, fldPath.Child("scopeSelector", "matchExpressions"))...)
	}
	return errs
}

func validateResourceQuotaStatus(status *corev1.ResourceQuotaStatus, fldPath *field.Path) field.ErrorList {
	errs := validateQuotaList(status.Hard, fldPath.Child("hard"))
	return append(errs, validateQuotaList(status.Used, fldPath.Child("used"))...)
}

// scopeFitsHard reports the error for a scope that restricts a standard
// resource it cannot measure (a BestEffort quota on cpu); qualified names
// (count/…) are not checked, as in Kubernetes.
func scopeFitsHard(scope corev1.ResourceQuotaScope, hard corev1.ResourceList) bool {
	allowed, known := quotaScopeResources[scope]
	if !known {
		return true // reported as an unsupported scope
	}
	for _, name := range sortedKeys(hard) {
		if standardQuotaResource(name) && !slices.Contains(allowed, name) {
			return false
		}
	}
	return true
}

// conflicting tells whether scopes hold both scopes of a pair no object
// can match.
func conflicting(scopes []corev1.ResourceQuotaScope) bool {
	for _, pair := range conflictingScopes {
		if slices.Contains(scopes, pair[0]) && slices.Contains(scopes, pair[1]) {
			return true
		}
	}
	return false
}

func validateQuotaScopes(spec *corev1.ResourceQuotaSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, scope := range spec.Scopes {
		if !standardQuotaScope(scope) {
			errs = append(errs, field.Invalid(fldPath, spec.Scopes, "unsupported scope"))
		}
		if !scopeFitsHard(scope, spec.Hard) {
			errs = append(errs, field.Invalid(fldPath, spec.Scopes, "unsupported scope applied to resource"))
		}
	}
	if conflicting(spec.Scopes) {
		errs = append(errs, field.Invalid(fldPath, spec.Scopes, "conflicting scopes"))
	}
	return errs
}

// validateQuotaScopeSelector checks each match expression. As Kubernetes
// reports them, the paths name the list, not the expression's index.
func validateQuotaScopeSelector(spec *corev1.ResourceQuotaSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	var scopes []corev1.ResourceQuotaScope
	for _, req := range spec.ScopeSelector.MatchExpressions {
		if !standardQuotaScope(req.ScopeName) {
			errs = append(errs, field.Invalid(fldPath.Child("scopeName"), req.ScopeName, "unsupported scope"))
		}
		if !scopeFitsHard(req.ScopeName, spec.Hard) {
			errs = append(errs, field.Invalid(fldPath, spec.ScopeSelector, "unsupported scope applied to resource"))
		}
		// Only PriorityClass has values to select by; the other scopes
		// are properties a pod has or has not.
		switch req.ScopeName {
		case corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeTerminating,
			corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
			if req.Operator != corev1.ScopeSelectorOpExists {
				errs = append(errs, field.Invalid(fldPath.Child("operator"), req.Operator, fmt.Sprintf(
					"must be 'Exists' when scope is any of %s, %s, %s, %s or %s",
					"ResourceQuotaScopeTerminating", "ResourceQuotaScopeNotTerminating", "ResourceQuotaScopeBestEffort",
					"ResourceQuotaScopeNotBestEffort", "ResourceQuotaScopeCrossNamespacePodAffinity")))
			}
		}
		switch req.Operator {
		case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(fldPath.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
			}
		case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
			if len(req.Values) != 0 {
				errs = append(errs, field.Invalid(fldPath.Child("values"), req.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
			}
		default:
			errs = append(errs, field.Invalid(fldPath.Child("operator"), req.Operator, "not a valid selector operator"))
		}
		scopes = append(scopes, req.ScopeName)
	}
	if conflicting(scopes) {
		errs = append(errs, field.Invalid(fldPath, spec.Scopes, "conflicting scopes"))
	}
	return errs
}

// validateResourceQuotaUpdate: a quota's scopes cannot change (what it has
// counted would no longer be what it selects); its hard limits and scope
// selector may.
func validateResourceQuotaUpdate(newQ, oldQ *corev1.ResourceQuota) field.ErrorList {
	if !sameScopes(newQ.Spec.Scopes, oldQ.Spec.Scopes) {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "scopes"), newQ.Spec.Scopes, apivalidation.FieldImmutableErrorMsg)}
	}
	return nil
}

// sameScopes compares two scope lists as sets.
func sameScopes(a, b []corev1.ResourceQuotaScope) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	for _, s := range b {
		if !slices.Contains(a, s) {
			return false
		}
	}
	return true
}

// validateResourceQuotaStatusUpdate checks only the status: a status
// update keeps the stored spec, so a quota stored before a spec rule
// tightened can still have its usage written.
func validateResourceQuotaStatusUpdate(newQ, _ *corev1.ResourceQuota) field.ErrorList {
	return validateResourceQuotaStatus(&newQ.Status, field.NewPath("status"))
}
