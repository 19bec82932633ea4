package apiserver_test

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// TestCustomResourceStatusFollowsSchema checks that a write through a
// custom resource's status subresource meets the version's schema as a
// write of the whole object does: a value the schema refuses is a 422
// naming its field and is not stored, and the schema's defaults fill the
// status.
func TestCustomResourceStatusFollowsSchema(t *testing.T) {
	srv := apiservertest.Start(t)
	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	nonNegative := map[string]any{"type": "integer", "minimum": int64(0)}
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "counters"}
	createCRD(t, srv, map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "counters.example.com"},
		"spec": map[string]any{
			"group": "example.com", "scope": "Namespaced",
			"names": map[string]any{"kind": "Counter", "plural": "counters", "singular": "counter"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
					"spec": map[string]any{"type": "object", "properties": map[string]any{"count": nonNegative}},
					"status": map[string]any{"type": "object", "properties": map[string]any{
						"count": nonNegative,
						"phase": map[string]any{"type": "string", "default": "Counting"},
					}},
				}}},
			}},
		},
	}, gvr)
	counters := dyn.Resource(gvr).Namespace("default")
	cr, err := counters.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Counter", "metadata": map[string]any{"name": "c"},
		"spec": map[string]any{"count": int64(1)},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	bad := cr.DeepCopy()
	bad.Object["status"] = map[string]any{"count": int64(-1)}
	_, err = counters.UpdateStatus(ctx, bad, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("status count -1: %v, want Invalid", err)
	}
	if st := err.(apierrors.APIStatus).Status(); st.Details == nil || len(st.Details.Causes) == 0 || st.Details.Causes[0].Field != "status.count" {
		t.Errorf("causes %+v, want one for status.count", st.Details)
	}
	if got, _ := counters.Get(ctx, "c", metav1.GetOptions{}); got.GetResourceVersion() != cr.GetResourceVersion() {
		t.Errorf("the refused status was stored: %v", got.Object["status"])
	}

	good := cr.DeepCopy()
	good.Object["status"] = map[string]any{"count": int64(3)}
	out, err := counters.UpdateStatus(ctx, good, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if count, _, _ := unstructured.NestedInt64(out.Object, "status", "count"); count != 3 {
		t.Errorf("status count %d, want 3", count)
	}
	if phase, _, _ := unstructured.NestedString(out.Object, "status", "phase"); phase != "Counting" {
		t.Errorf("status phase %q, want the schema's default Counting", phase)
	}
}
