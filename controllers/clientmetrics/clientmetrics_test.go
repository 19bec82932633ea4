package clientmetrics_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/controllers/clientmetrics"
)

// A real client's requests to a real API server are counted by code, method
// and host, and timed by verb and host, under Kubernetes' names.
func TestClientRequestsAreCounted(t *testing.T) {
	m := clientmetrics.Register()
	if again := clientmetrics.Register(); again != m {
		t.Fatal("Register returned a second set of metrics; client-go takes only the first")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collectors()...)

	api := apiservertest.Start(t)
	c := kubernetes.NewForConfigOrDie(api.Config)
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().ConfigMaps("default").Get(ctx, "absent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("want NotFound, got %v", err)
	}
	u, err := url.Parse(api.URL)
	if err != nil {
		t.Fatal(err)
	}
	host := u.Host
	for _, want := range []string{
		`rest_client_requests_total{code="200",host="` + host + `",method="GET"}`,
		`rest_client_requests_total{code="404",host="` + host + `",method="GET"}`,
		`rest_client_request_duration_seconds_bucket{host="` + host + `",verb="GET",le="60"}`,
		`rest_client_rate_limiter_duration_seconds_count{host="` + host + `",verb="GET"}`,
		`rest_client_response_size_bytes_count{host="` + host + `",verb="GET"}`,
		`rest_client_request_size_bytes_count{host="` + host + `",verb="GET"}`,
	} {
		if !strings.Contains(gather(t, reg), want) {
			t.Errorf("no series %s in:\n%s", want, gather(t, reg))
		}
	}
	if out := gather(t, reg); strings.Contains(out, "rest_client_request_retries_total{") {
		t.Errorf("retry series without any retry:\n%s", out)
	}
}

// gather renders reg in Prometheus' text format, as a scrape sees it.
func gather(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}
