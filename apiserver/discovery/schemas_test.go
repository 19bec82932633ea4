package discovery

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestModelsFromGoTypes(t *testing.T) {
	top, ms := modelsFor(&corev1.Pod{})
	if top != "io.k8s.api.core.v1.Pod" {
		t.Fatalf("model name %q", top)
	}
	pod := ms[top]
	if pod["description"] != (corev1.Pod{}).SwaggerDoc()[""] {
		t.Errorf("Pod description %q", pod["description"])
	}
	props := pod["properties"].(map[string]any)
	for _, f := range []string{"apiVersion", "kind", "metadata", "spec", "status"} {
		if props[f] == nil {
			t.Errorf("Pod lacks property %s", f)
		}
	}
	spec := props["spec"].(map[string]any)
	if !reflect.DeepEqual(spec["allOf"], []any{map[string]any{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}}) || spec["description"] == "" {
		t.Errorf("Pod.spec %v", spec)
	}
	podSpec := ms["io.k8s.api.core.v1.PodSpec"]
	containers := podSpec["properties"].(map[string]any)["containers"].(map[string]any)
	if containers["type"] != "array" || containers["x-kubernetes-patch-merge-key"] != "name" || containers["x-kubernetes-patch-strategy"] != "merge" {
		t.Errorf("PodSpec.containers %v", containers)
	}
	if req, _ := podSpec["required"].([]string); !contains(req, "containers") {
		t.Errorf("PodSpec.required %v lacks containers", podSpec["required"])
	}
	meta := ms["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"].(map[string]any)
	if ct := meta["creationTimestamp"].(map[string]any); ct["type"] != "string" || ct["format"] != "date-time" {
		t.Errorf("ObjectMeta.creationTimestamp %v", ct)
	}
	port := ms["io.k8s.api.core.v1.HTTPGetAction"]["properties"].(map[string]any)["port"].(map[string]any)
	if port["x-kubernetes-int-or-string"] != true {
		t.Errorf("HTTPGetAction.port %v", port)
	}
	// Recursive types (JSONSchemaProps refers to itself) terminate, and the
	// result is plain JSON.
	_, crd := modelsFor(&apiextensionsv1.CustomResourceDefinition{})
	if _, ok := crd["io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"]; !ok {
		t.Errorf("no JSONSchemaProps model among %d", len(crd))
	}
	if _, err := json.Marshal(crd); err != nil {
		t.Fatal(err)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
