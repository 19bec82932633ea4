package admission_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// TestPodUsageOverItsLife: a pod counts in count/pods as long as it is
// stored, and for compute quota until it finishes or its deletion runs a
// grace period past its deletion timestamp, as Kubernetes' QuotaV1Pod.
func TestPodUsageOverItsLife(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := func(edit func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
		if edit != nil {
			edit(p)
		}
		return p
	}
	deleting := func(at time.Time, grace int64) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: at}
			p.DeletionGracePeriodSeconds = ptr.To(grace)
		}
	}
	full := corev1.ResourceList{"count/pods": resource.MustParse("1"), corev1.ResourcePods: resource.MustParse("1"),
		corev1.ResourceRequestsCPU: resource.MustParse("100m"), corev1.ResourceCPU: resource.MustParse("100m")}
	countOnly := corev1.ResourceList{"count/pods": resource.MustParse("1")}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want corev1.ResourceList
	}{
		{"running", pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }), full},
		{"succeeded", pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), countOnly},
		{"failed", pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), countOnly},
		// Deleted 10s ago with 30s of grace: its deletion timestamp is 20s
		// ahead, and it holds quota until 50s from now.
		{"within its grace period", pod(deleting(now.Add(20*time.Second), 30)), full},
		{"past its deletion timestamp, within the grace after it", pod(deleting(now.Add(-20*time.Second), 30)), full},
		{"a grace period past its deletion timestamp", pod(deleting(now.Add(-31*time.Second), 30)), countOnly},
	} {
		got := admission.UsageAt(pods, tc.pod, now)
		if !apiequality.Semantic.DeepEqual(got, tc.want) {
			t.Errorf("%s: usage %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPodComputeUsage: the names a pod's requests and limits are charged
// under, as Kubernetes' pod evaluator names them: cpu, memory and
// ephemeral-storage bare and with requests. and limits., hugepages bare
// and with requests., extended resources only with requests.
func TestPodComputeUsage(t *testing.T) {
	q := resource.MustParse
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceEphemeralStorage: q("1Gi"),
			"hugepages-2Mi": q("4Mi"), "example.com/gpu": q("2")},
		Limits: corev1.ResourceList{corev1.ResourceMemory: q("1Gi"), "hugepages-2Mi": q("4Mi"), "example.com/gpu": q("2")},
	}}}}}
	want := corev1.ResourceList{
		"count/pods": q("1"), corev1.ResourcePods: q("1"),
		corev1.ResourceCPU: q("1"), corev1.ResourceRequestsCPU: q("1"),
		corev1.ResourceEphemeralStorage: q("1Gi"), corev1.ResourceRequestsEphemeralStorage: q("1Gi"),
		corev1.ResourceLimitsMemory: q("1Gi"),
		"hugepages-2Mi":             q("4Mi"), "requests.hugepages-2Mi": q("4Mi"),
		"requests.example.com/gpu": q("2"),
	}
	if got := admission.Usage(schema.GroupResource{Resource: "pods"}, pod); !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("usage %v,\nwant %v", got, want)
	}
	for name, want := range map[corev1.ResourceName]bool{
		"pods": true, "count/pods": true, "cpu": true, "requests.memory": true, "limits.ephemeral-storage": true,
		"hugepages-1Gi": true, "requests.hugepages-2Mi": true, "requests.example.com/gpu": true,
		"limits.hugepages-2Mi": false, "limits.example.com/gpu": false, "requests.storage": false,
		"requests.kubernetes.io/x": false, "services": false, "count/configmaps": false,
	} {
		if got := admission.PodResource(name); got != want {
			t.Errorf("PodResource(%s) = %v, want %v", name, got, want)
		}
	}
}

// TestClaimStorageIsWholeBytes: a claim asking for a fraction of a byte is
// charged the next whole byte, as Kubernetes counts it (so that the quota's
// status holds whole bytes).
func TestClaimStorageIsWholeBytes(t *testing.T) {
	class := "fast"
	pvc := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class,
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1500m")}}}}
	got := admission.Usage(schema.GroupResource{Resource: "persistentvolumeclaims"}, pvc)
	for _, name := range []corev1.ResourceName{corev1.ResourceRequestsStorage, "fast.storageclass.storage.k8s.io/requests.storage"} {
		if v := got[name]; v.String() != "2" {
			t.Errorf("%s: %s, want 2", name, v.String())
		}
	}
}

// TestClaimUsage: what a claim is charged, as Kubernetes' claim evaluator
// measures it: the claim in persistentvolumeclaims (and per class), its
// storage request in requests.storage (and per class), the allocated size
// when a failed expansion left it above the request; a claim with no
// storage request is charged no storage at all (the name is left out, not
// zero), and an allocated size counts only beside a request.
func TestClaimUsage(t *testing.T) {
	claims := schema.GroupResource{Resource: "persistentvolumeclaims"}
	q := resource.MustParse
	claim := func(class string, request, allocated string) *corev1.PersistentVolumeClaim {
		pvc := &corev1.PersistentVolumeClaim{}
		if class != "" {
			pvc.Spec.StorageClassName = &class
		}
		if request != "" {
			pvc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: q(request)}
		}
		if allocated != "" {
			pvc.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: q(allocated)}
		}
		return pvc
	}
	for _, tc := range []struct {
		name string
		pvc  *corev1.PersistentVolumeClaim
		want corev1.ResourceList
	}{
		{"no class", claim("", "1Gi", ""), corev1.ResourceList{
			"count/persistentvolumeclaims": q("1"), corev1.ResourcePersistentVolumeClaims: q("1"), corev1.ResourceRequestsStorage: q("1Gi")}},
		{"class", claim("gold", "1Gi", ""), corev1.ResourceList{
			"count/persistentvolumeclaims": q("1"), corev1.ResourcePersistentVolumeClaims: q("1"), corev1.ResourceRequestsStorage: q("1Gi"),
			"gold.storageclass.storage.k8s.io/persistentvolumeclaims": q("1"), "gold.storageclass.storage.k8s.io/requests.storage": q("1Gi")}},
		{"allocated above the request", claim("gold", "1Gi", "2Gi"), corev1.ResourceList{
			"count/persistentvolumeclaims": q("1"), corev1.ResourcePersistentVolumeClaims: q("1"), corev1.ResourceRequestsStorage: q("2Gi"),
			"gold.storageclass.storage.k8s.io/persistentvolumeclaims": q("1"), "gold.storageclass.storage.k8s.io/requests.storage": q("2Gi")}},
		{"allocated below the request", claim("", "2Gi", "1Gi"), corev1.ResourceList{
			"count/persistentvolumeclaims": q("1"), corev1.ResourcePersistentVolumeClaims: q("1"), corev1.ResourceRequestsStorage: q("2Gi")}},
		{"no storage request", claim("gold", "", ""), corev1.ResourceList{
			"count/persistentvolumeclaims": q("1"), corev1.ResourcePersistentVolumeClaims: q("1"),
			"gold.storageclass.storage.k8s.io/persistentvolumeclaims": q("1")}},
		{"allocated, no storage request", claim("", "", "1Gi"), corev1.ResourceList{
			"count/persistentvolumeclaims": q("1"), corev1.ResourcePersistentVolumeClaims: q("1")}},
	} {
		if got := admission.Usage(claims, tc.pvc); !apiequality.Semantic.DeepEqual(got, tc.want) {
			t.Errorf("%s: usage %v,\nwant %v", tc.name, got, tc.want)
		}
	}
}
