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
		"/foo":                              "the server could not find the requested resource",
		"/apis/nogroup/v1":                  "the server could not find the requested resource",
		"/api/v2":                           "the server could not find the requested resource",
		"/apis/apps/v1/foos":                "the server could not find the requested resource (get foos.apps)",
		"/api/v1/namespaces/default/foos/x": "the server could not find the requested resource (get foos x)",
	} {
		resp, data := admin.do("GET", path, "", nil)
		var st metav1.Status
		if err := json.Unmarshal(data, &st); err != nil || resp.StatusCode != 404 || st.Code != 404 ||
			st.Reason != metav1.StatusReasonNotFound || st.Message != want {
			t.Errorf("GET %s: %d %s (%v), want a NotFound Status saying %q", path, resp.StatusCode, data, err, want)
		}
	}
}
