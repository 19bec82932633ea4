package apiserver_test

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// A path the server serves nothing at gets a 404 Status with the message
// client-go gives kube-apiserver's plain 404, naming what was asked for
// when the path says it, not ` "" not found`.
func TestUnservedPathsSayWhatWasNotFound(t *testing.T) {
	admin := newClient(t, apiservertest.Start(t))
	for path, want := range map[string]string{
		"/foo":               "the server could not find the requested resource",
		"/apis/nogroup/v1":   "the server could not find the requested resource",
		"/api/v2":            "the server could not find the requested resource",
		"/apis/apps/v1/foos": "the server could not find the requested resource (get foos.apps)",
		// networking.k8s.io is served for ingresses, ingressclasses
		// and networkpolicies only.
		"/apis/networking.k8s.io/v1/servicecidrs": "the server could not find the requested resource (get servicecidrs.networking.k8s.io)",
		"/apis/networking.k8s.io/v1/ipaddresses":  "the server could not find the requested resource (get ipaddresses.networking.k8s.io)",
		"/api/v1/namespaces/default/foos/x":       "the server could not find the requested resource (get foos x)",
	} {
		resp, data := admin.do("GET", path, "", nil)
		var st metav1.Status
		if err := json.Unmarshal(data, &st); err != nil || resp.StatusCode != 404 || st.Code != 404 ||
			st.Reason != metav1.StatusReasonNotFound || st.Message != want {
			t.Errorf("GET %s: %d %s (%v), want a NotFound Status saying %q", path, resp.StatusCode, data, err, want)
		}
	}
}

// /watch/... serves GET only: a POST there is a 405 and creates nothing
// (it was served as a create), a DELETE deletes nothing, as Kubernetes
// registers only the watch at those paths.
func TestWatchPathsServeOnlyGet(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := newClient(t, srv)
	cm := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w"}}`)
	if resp, data := admin.do("POST", "/api/v1/namespaces/default/configmaps", "application/json", cm); resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, data)
	}
	for _, c := range []struct{ method, path string }{
		{"POST", "/api/v1/watch/namespaces/default/configmaps"},
		{"DELETE", "/api/v1/watch/namespaces/default/configmaps/w"},
	} {
		body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w2"}}`)
		resp, data := admin.do(c.method, c.path, "application/json", body)
		var st metav1.Status
		if err := json.Unmarshal(data, &st); err != nil || resp.StatusCode != 405 || st.Reason != metav1.StatusReasonMethodNotAllowed {
			t.Errorf("%s %s: %d %s, want a 405 MethodNotAllowed Status", c.method, c.path, resp.StatusCode, data)
		}
	}
	if resp, _ := admin.do("GET", "/api/v1/namespaces/default/configmaps/w2", "", nil); resp.StatusCode != 404 {
		t.Errorf("configmap w2 after the POST to /watch: %d, want 404", resp.StatusCode)
	}
	if resp, _ := admin.do("GET", "/api/v1/namespaces/default/configmaps/w", "", nil); resp.StatusCode != 200 {
		t.Errorf("configmap w after the DELETE to /watch: %d, want 200", resp.StatusCode)
	}
}
