package apiserver_test

import (
	"strings"
	"testing"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// TestRequestMetricsLabels: apiserver_request_total and
// apiserver_request_duration_seconds carry kube-apiserver's labels and
// values (verb in upper case as its installer names them, POST for a create,
// LIST, APPLY for a server-side apply, group, version, resource and
// subresource apart, scope, component, dry_run), so that the dashboards and
// alerts written for Kubernetes (kubernetes-mixin's verb=~"LIST|GET",
// verb=~"POST|PUT|PATCH|DELETE", code=~"5..") find them.
func TestRequestMetricsLabels(t *testing.T) {
	srv := apiservertest.Start(t)
	c := newClient(t, srv)
	steps := []struct{ method, path, ctype, body string }{
		{"POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m1"}}`},
		{"POST", "/api/v1/namespaces/default/configmaps?dryRun=All", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m2"}}`},
		{"GET", "/api/v1/namespaces/default/configmaps/m1", "", ""},
		{"GET", "/api/v1/namespaces/default/configmaps", "", ""},
		{"GET", "/api/v1/configmaps", "", ""},
		{"PUT", "/api/v1/namespaces/default/configmaps/m1", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m1"},"data":{"a":"b"}}`},
		{"PATCH", "/api/v1/namespaces/default/configmaps/m1", "application/merge-patch+json", `{"data":{"c":"d"}}`},
		{"PATCH", "/api/v1/namespaces/default/configmaps/m1?fieldManager=t", "application/apply-patch+yaml", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m1"},"data":{"e":"f"}}`},
		{"GET", "/apis/apps/v1/namespaces/default/deployments/nope/scale", "", ""},
		{"DELETE", "/api/v1/namespaces/default/configmaps/m1", "", ""},
		{"DELETE", "/api/v1/namespaces/default/configmaps", "", ""},
	}
	for _, s := range steps {
		resp, data := c.do(s.method, s.path, s.ctype, []byte(s.body))
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %s: %d %s", s.method, s.path, resp.StatusCode, data)
		}
	}
	_, data := c.do("GET", "/metrics", "", nil)
	for _, want := range []string{
		`apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 1`,
		`apiserver_request_total{code="201",component="apiserver",dry_run="All",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 1`,
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 1`,
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"} 1`,
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="cluster",subresource="",verb="LIST",version="v1"} 1`,
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="PUT",version="v1"} 1`,
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="PATCH",version="v1"} 1`,
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="APPLY",version="v1"} 1`,
		`apiserver_request_total{code="404",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="scale",verb="GET",version="v1"} 1`,
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="DELETE",version="v1"} 1`,
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="DELETECOLLECTION",version="v1"} 1`,
		`apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1",le="`,
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "apiserver_request_total") {
				t.Log(line)
			}
		}
	}
}

// TestRequestMetricsDryRunBounded: the dry_run label takes the client's
// dryRun values only when they are valid ("All"); anything else counts as
// "invalid", as kube-apiserver's cleanDryRun, so a client cannot grow the
// metrics without bound by sending made-up values.
func TestRequestMetricsDryRunBounded(t *testing.T) {
	srv := apiservertest.Start(t)
	c := newClient(t, srv)
	for _, v := range []string{"bogus-1", "bogus-2", "All&dryRun=x"} {
		c.do("POST", "/api/v1/namespaces/default/configmaps?dryRun="+v, "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m"}}`))
	}
	c.do("POST", "/api/v1/namespaces/default/configmaps?dryRun=All&dryRun=All", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m"}}`))
	_, data := c.do("GET", "/metrics", "", nil)
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "apiserver_request_total") && strings.Contains(line, `resource="configmaps"`) &&
			!strings.Contains(line, `dry_run="invalid"`) && !strings.Contains(line, `dry_run="All"`) {
			t.Errorf("dry_run label outside {All, invalid}: %s", line)
		}
	}
	if !strings.Contains(string(data), `dry_run="invalid"`) {
		t.Errorf("no request counted with dry_run=\"invalid\"")
	}
}

// TestRequestMetricsUnservedResource: a request for a resource the server
// does not serve (a 404 before any handler) is not counted under the
// resource, group and version its path made up, as kube-apiserver counts
// only its installed routes; otherwise any client could grow the metrics
// without bound with made-up paths.
func TestRequestMetricsUnservedResource(t *testing.T) {
	srv := apiservertest.Start(t)
	c := newClient(t, srv)
	for _, p := range []string{"/api/v1/made-up-things", "/apis/madeup.example.com/v9/namespaces/default/widgets/w"} {
		if resp, _ := c.do("GET", p, "", nil); resp.StatusCode != 404 {
			t.Fatalf("GET %s: %d, want 404", p, resp.StatusCode)
		}
	}
	_, data := c.do("GET", "/metrics", "", nil)
	for _, bad := range []string{`resource="made-up-things"`, `group="madeup.example.com"`, `resource="widgets"`} {
		if strings.Contains(string(data), bad) {
			t.Errorf("/metrics counts a request under %s", bad)
		}
	}
}
