package admission_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/apiserver/admission"
)

// TestQuotaScopes: which pods a scoped quota selects, as Kubernetes' pod
// evaluator decides it; objects other than pods match only unscoped quotas.
func TestQuotaScopes(t *testing.T) {
	pod := func(edit func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		if edit != nil {
			edit(p)
		}
		return p
	}
	plain := pod(nil)
	deadline := pod(func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](30) })
	high := pod(func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" })
	term := corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{}}
	sameNamespace := pod(func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}}
	})
	namespaces := term
	namespaces.Namespaces = []string{"other"}
	listed := pod(func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{namespaces}}}
	})
	selector := term
	selector.NamespaceSelector = &metav1.LabelSelector{}
	preferredAnti := pod(func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: selector}}}}
	})
	scoped := func(scopes ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Scopes: scopes}}
	}
	selected := func(name corev1.ResourceQuotaScope, op corev1.ScopeSelectorOperator, values ...string) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
			{ScopeName: name, Operator: op, Values: values}}}}}
	}
	for _, tc := range []struct {
		name  string
		quota *corev1.ResourceQuota
		obj   runtime.Object
		want  bool
	}{
		{"unscoped quota, pod", scoped(), plain, true},
		{"unscoped quota, service", scoped(), &corev1.Service{}, true},
		{"scoped quota, service", scoped(corev1.ResourceQuotaScopeNotTerminating), &corev1.Service{}, false},
		{"Terminating, no deadline", scoped(corev1.ResourceQuotaScopeTerminating), plain, false},
		{"Terminating, deadline", scoped(corev1.ResourceQuotaScopeTerminating), deadline, true},
		{"NotTerminating, deadline", scoped(corev1.ResourceQuotaScopeNotTerminating), deadline, false},
		{"BestEffort", scoped(corev1.ResourceQuotaScopeBestEffort), plain, true},
		{"NotBestEffort", scoped(corev1.ResourceQuotaScopeNotBestEffort), plain, false},
		{"PriorityClass In", selected(corev1.ResourceQuotaScopePriorityClass, corev1.ScopeSelectorOpIn, "high"), high, true},
		{"PriorityClass In, other class", selected(corev1.ResourceQuotaScopePriorityClass, corev1.ScopeSelectorOpIn, "low"), high, false},
		{"PriorityClass NotIn, no class", selected(corev1.ResourceQuotaScopePriorityClass, corev1.ScopeSelectorOpNotIn, "high"), plain, true},
		{"PriorityClass Exists, no class", selected(corev1.ResourceQuotaScopePriorityClass, corev1.ScopeSelectorOpExists), plain, false},
		{"PriorityClass DoesNotExist, no class", selected(corev1.ResourceQuotaScopePriorityClass, corev1.ScopeSelectorOpDoesNotExist), plain, true},
		{"CrossNamespacePodAffinity, no affinity", scoped(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), plain, false},
		{"CrossNamespacePodAffinity, own namespace", scoped(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), sameNamespace, false},
		{"CrossNamespacePodAffinity, namespace list", scoped(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), listed, true},
		{"CrossNamespacePodAffinity selector, preferred anti-affinity with a namespace selector",
			selected(corev1.ResourceQuotaScopeCrossNamespacePodAffinity, corev1.ScopeSelectorOpExists), preferredAnti, true},
		{"CrossNamespacePodAffinity and NotTerminating", scoped(corev1.ResourceQuotaScopeCrossNamespacePodAffinity, corev1.ResourceQuotaScopeTerminating), listed, false},
	} {
		if got := admission.QuotaMatches(tc.quota, tc.obj); got != tc.want {
			t.Errorf("%s: matches %v, want %v", tc.name, got, tc.want)
		}
	}
}
