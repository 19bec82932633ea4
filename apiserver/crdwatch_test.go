package apiserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// twoVersionCRD is a namespaced CRD of example.com/<plural> served in v1
// (the storage version) and v2.
func twoVersionCRD(plural, kind string) map[string]any {
	version := func(name string, storage bool) map[string]any {
		return map[string]any{
			"name": name, "served": true, "storage": storage,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
				"spec": map[string]any{"type": "object", "properties": map[string]any{"size": map[string]any{"type": "integer"}}},
			}}},
		}
	}
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + ".example.com"},
		"spec": map[string]any{
			"group": "example.com", "scope": "Namespaced",
			"names":    map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind)},
			"versions": []any{version("v1", true), version("v2", false)},
		},
	}
}

func customObject(gvr schema.GroupVersionResource, kind, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind, "metadata": map[string]any{"name": name},
	}}
}

// TestCustomResourceJSONWatchLines: a JSON watch of a custom resource has
// one event a line, as Kubernetes writes every JSON watch (the object's
// encoder ends it with a newline, which stays out of the event), so that
// line readers (curl | jq, scripts) see whole events.
func TestCustomResourceJSONWatchLines(t *testing.T) {
	srv := apiservertest.Start(t)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	v1 := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	createCRD(t, srv, twoVersionCRD("widgets", "Widget"), v1)
	for _, name := range []string{"a", "b"} {
		if _, err := dyn.Resource(v1).Namespace("default").Create(context.Background(), customObject(v1, "Widget", name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	resp, data := newClient(t, srv).do("GET", "/apis/example.com/v1/namespaces/default/widgets?watch=true&timeoutSeconds=1", "", nil, "Accept", "application/json")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want one for each of the 2 ADDED events:\n%s", len(lines), data)
	}
	for i, line := range lines {
		var ev struct {
			Type   string
			Object struct{ Metadata struct{ Name string } }
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Type != "ADDED" || ev.Object.Metadata.Name != []string{"a", "b"}[i] {
			t.Errorf("line %d = %s (%v), want the ADDED event of %s", i, line, err, []string{"a", "b"}[i])
		}
	}
}
