package validation

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// quotaErrors renders errs as "field: detail", sorted.
func quotaErrors(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Field+": "+e.Detail)
	}
	slices.Sort(out)
	return out
}

// TestValidateResourceQuota: the ResourceQuota rules of Kubernetes'
// ValidateResourceQuota: names a quota knows, whole numbers for counts,
// scopes restricted to the resources they can measure, no conflicting
// scopes, and scope selectors whose operators fit their scopes. The
// VolumeAttributesClass scope is refused: its feature gate is off by
// default in Kubernetes v1.33.
func TestValidateResourceQuota(t *testing.T) {
	q := resource.MustParse
	quota := func(hard corev1.ResourceList, scopes []corev1.ResourceQuotaScope, sel ...corev1.ScopedResourceSelectorRequirement) *corev1.ResourceQuota {
		rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "default"},
			Spec: corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes}}
		if sel != nil {
			rq.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: sel}
		}
		return rq
	}
	scopes := func(s ...corev1.ResourceQuotaScope) []corev1.ResourceQuotaScope { return s }
	expr := func(scope corev1.ResourceQuotaScope, op corev1.ScopeSelectorOperator, values ...string) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: scope, Operator: op, Values: values}
	}
	pods := corev1.ResourceList{corev1.ResourcePods: q("10")}
	compute := corev1.ResourceList{corev1.ResourcePods: q("10"), corev1.ResourceRequestsCPU: q("2"), corev1.ResourceLimitsMemory: q("4Gi")}
	const (
		unsupported = "unsupported scope"
		notForRes   = "unsupported scope applied to resource"
		conflict    = "conflicting scopes"
		mustExist   = "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"
		me          = "spec.scopeSelector.matchExpressions"
	)
	for _, tc := range []struct {
		name  string
		quota *corev1.ResourceQuota
		want  []string
	}{
		{"unscoped, every kind of name", quota(corev1.ResourceList{
			corev1.ResourcePods: q("10"), corev1.ResourceRequestsStorage: q("10Gi"), "count/deployments.apps": q("3"),
			"gold.storageclass.storage.k8s.io/requests.storage": q("5Gi"), "requests.example.com/gpu": q("1"),
			"hugepages-2Mi": q("1Gi"), corev1.ResourceServicesNodePorts: q("2")}, nil), nil},
		{"not a quota resource", quota(corev1.ResourceList{"storage": q("1Gi"), "widgets": q("1")}, nil), []string{
			"spec.hard[storage]: must be a standard resource for quota",
			"spec.hard[widgets]: must be a standard resource for quota",
			"spec.hard[widgets]: must be a standard resource type or fully qualified"}},
		{"counts are whole", quota(corev1.ResourceList{corev1.ResourcePods: q("1500m"), "count/jobs.batch": q("0.5"), corev1.ResourceRequestsCPU: q("500m")}, nil), []string{
			"spec.hard[count/jobs.batch]: must be an integer", "spec.hard[pods]: must be an integer"}},
		{"status is checked too", func() *corev1.ResourceQuota {
			rq := quota(pods, nil)
			rq.Status.Used = corev1.ResourceList{corev1.ResourcePods: q("-1")}
			return rq
		}(), []string{"status.used[pods]: must be greater than or equal to 0"}},

		{"Terminating over pod compute", quota(compute, scopes(corev1.ResourceQuotaScopeTerminating)), nil},
		{"NotTerminating over storage", quota(corev1.ResourceList{corev1.ResourcePods: q("1"), corev1.ResourceRequestsStorage: q("1Gi")},
			scopes(corev1.ResourceQuotaScopeNotTerminating)), []string{"spec.scopes: " + notForRes}},
		{"BestEffort over pods", quota(pods, scopes(corev1.ResourceQuotaScopeBestEffort)), nil},
		{"BestEffort over cpu", quota(compute, scopes(corev1.ResourceQuotaScopeBestEffort)), []string{"spec.scopes: " + notForRes}},
		{"NotBestEffort over services", quota(corev1.ResourceList{corev1.ResourceServices: q("1")}, scopes(corev1.ResourceQuotaScopeNotBestEffort)),
			[]string{"spec.scopes: " + notForRes}},
		{"scopes leave qualified counts unchecked", quota(corev1.ResourceList{"count/services": q("1")}, scopes(corev1.ResourceQuotaScopeBestEffort)), nil},
		{"BestEffort and NotBestEffort", quota(pods, scopes(corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort)),
			[]string{"spec.scopes: " + conflict}},
		{"Terminating and NotTerminating", quota(pods, scopes(corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating)),
			[]string{"spec.scopes: " + conflict}},
		{"Terminating and BestEffort", quota(pods, scopes(corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeBestEffort)), nil},
		{"unknown scope", quota(pods, scopes("Sometimes")), []string{"spec.scopes: " + unsupported}},
		{"VolumeAttributesClass scope", quota(corev1.ResourceList{corev1.ResourcePersistentVolumeClaims: q("1")},
			scopes(corev1.ResourceQuotaScopeVolumeAttributesClass)), []string{"spec.scopes: " + unsupported}},

		{"PriorityClass In", quota(compute, nil, expr(corev1.ResourceQuotaScopePriorityClass, corev1.ScopeSelectorOpIn, "high")), nil},
		{"PriorityClass NotIn", quota(compute, nil, expr(corev1.ResourceQuotaScopePriorityClass, corev1.ScopeSelectorOpNotIn, "high")), nil},
		{"PriorityClass Exists", quota(compute, nil, expr(corev1.ResourceQuotaScopePriorityClass, corev1.ScopeSelectorOpExists)), nil},
		{"PriorityClass DoesNotExist", quota(compute, nil, expr(corev1.ResourceQuotaScopePriorityClass, corev1.ScopeSelectorOpDoesNotExist)), nil},
		{"PriorityClass In without values", quota(pods, nil, expr(corev1.ResourceQuotaScopePriorityClass, corev1.ScopeSelectorOpIn)),
			[]string{me + ".values: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"}},
		{"PriorityClass Exists with values", quota(pods, nil, expr(corev1.ResourceQuotaScopePriorityClass, corev1.ScopeSelectorOpExists, "high")),
			[]string{me + ".values: must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"}},
		{"PriorityClass over configmaps", quota(corev1.ResourceList{corev1.ResourceConfigMaps: q("1")}, nil,
			expr(corev1.ResourceQuotaScopePriorityClass, corev1.ScopeSelectorOpIn, "high")), []string{me + ": " + notForRes}},
		{"bad operator", quota(pods, nil, expr(corev1.ResourceQuotaScopePriorityClass, "Gt", "1")),
			[]string{me + ".operator: not a valid selector operator"}},
		{"CrossNamespacePodAffinity Exists", quota(pods, nil, expr(corev1.ResourceQuotaScopeCrossNamespacePodAffinity, corev1.ScopeSelectorOpExists)), nil},
		{"CrossNamespacePodAffinity In", quota(pods, nil, expr(corev1.ResourceQuotaScopeCrossNamespacePodAffinity, corev1.ScopeSelectorOpIn, "x")),
			[]string{me + ".operator: " + mustExist}},
		{"Terminating DoesNotExist", quota(pods, nil, expr(corev1.ResourceQuotaScopeTerminating, corev1.ScopeSelectorOpDoesNotExist)),
			[]string{me + ".operator: " + mustExist}},
		{"BestEffort and NotBestEffort selected", quota(pods, nil, expr(corev1.ResourceQuotaScopeBestEffort, corev1.ScopeSelectorOpExists),
			expr(corev1.ResourceQuotaScopeNotBestEffort, corev1.ScopeSelectorOpExists)), []string{me + ": " + conflict}},
		{"unknown scope selected", quota(pods, nil, expr("Sometimes", corev1.ScopeSelectorOpExists)), []string{me + ".scopeName: " + unsupported}},
	} {
		got := quotaErrors(Validate(tc.quota))
		want := append([]string{}, tc.want...)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: errors\n  %q\nwant\n  %q", tc.name, got, want)
		}
	}
}

// TestValidateResourceQuotaUpdate: a quota's scopes cannot change; its
// limits can. A status update checks only the status, so a quota stored
// with a spec the rules now refuse can still have its usage written.
func TestValidateResourceQuotaUpdate(t *testing.T) {
	old := stored(&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "default"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")},
			Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}}})
	raised := old.DeepCopy()
	raised.Spec.Hard[corev1.ResourcePods] = resource.MustParse("5")
	rescoped := old.DeepCopy()
	rescoped.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}
	unscoped := old.DeepCopy()
	unscoped.Spec.Scopes = nil
	runUpdate(t, []updateCase{
		{name: "limits may change", old: old, new: raised},
		{name: "scopes may not change", old: old, new: rescoped, want: []want{{"spec.scopes", invalid}}},
		{name: "scopes may not be dropped", old: old, new: unscoped, want: []want{{"spec.scopes", invalid}}},
	})

	bad := old.DeepCopy()
	bad.Spec.Hard[corev1.ResourceRequestsCPU] = resource.MustParse("1") // BestEffort cannot restrict cpu
	withUsage := bad.DeepCopy()
	withUsage.Status.Used = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1"), corev1.ResourceRequestsCPU: resource.MustParse("0")}
	if errs := ValidateStatusUpdate(withUsage, bad); len(errs) != 0 {
		t.Errorf("status update of a quota stored with a refused spec: %v", errs)
	}
	withUsage.Status.Used[corev1.ResourcePods] = resource.MustParse("-1")
	if errs := quotaErrors(ValidateStatusUpdate(withUsage, bad)); !slices.Equal(errs, []string{"status.used[pods]: must be greater than or equal to 0"}) {
		t.Errorf("negative usage in a status update: %q", errs)
	}
}
