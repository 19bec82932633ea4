package manager

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// Against a real API server, with the disruption controller acting as its own service account:
// a percentage budget over pods whose controller is a custom resource counts the replicas the
// resource's scale subresource asks for (found through discovery, read with the controller's
// */scale permission), as Kubernetes' disruption controller does.
func TestDisruptionBudgetOverCustomResourceScale(t *testing.T) {
	r := runControllers(t, []string{"disruption"}, nil)
	admin, ctx := r.admin, r.ctx
	dyn, err := dynamic.NewForConfig(r.srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	if err := crd.UnmarshalJSON([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"metadata":{"name":"shards.db.example.com"},
		"spec":{"group":"db.example.com","scope":"Namespaced","names":{"plural":"shards","singular":"shard","kind":"Shard","listKind":"ShardList"},
		"versions":[{"name":"v1","served":true,"storage":true,
			"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}},
			"subresources":{"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas"}}}]}}`)); err != nil {
		t.Fatal(err)
	}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	shards := dyn.Resource(schema.GroupVersionResource{Group: "db.example.com", Version: "v1", Resource: "shards"}).Namespace("default")
	shard := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "db.example.com/v1", "kind": "Shard",
		"metadata": map[string]any{"name": "main"}, "spec": map[string]any{"replicas": int64(4)},
	}}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		shard, err = shards.Create(ctx, shard, metav1.CreateOptions{})
		return err == nil, nil // the new resource is served once the definition is established
	}); err != nil {
		t.Fatalf("create shard: %v", err)
	}
	yes := true
	for _, name := range []string{"main-0", "main-1"} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "shard"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "db.example.com/v1", Kind: "Shard", Name: "main", UID: shard.GetUID(), Controller: &yes}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db:1"}}},
		}
		if _, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// 4 replicas asked for by the shard's scale, at most 1 (25%) unavailable.
	quarterBudget(t, r, "shard", 4, 3)
}

// quarterBudget creates a budget allowing 25% of the pods labelled app=name to be unavailable
// and waits until its status expects the given pods and healthy ones.
func quarterBudget(t *testing.T, r running, name string, expected, desiredHealthy int32) {
	t.Helper()
	admin, ctx := r.admin, r.ctx
	quarter := intstr.FromString("25%")
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &quarter, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}},
	}
	if _, err := admin.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var last policyv1.PodDisruptionBudgetStatus
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := admin.PolicyV1().PodDisruptionBudgets("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = got.Status
		return last.ObservedGeneration == got.Generation && last.ExpectedPods == expected && last.DesiredHealthy == desiredHealthy, nil
	}); err != nil {
		t.Fatalf("budget %s never expected %d pods and %d healthy: %+v", name, expected, desiredHealthy, last)
	}
}
