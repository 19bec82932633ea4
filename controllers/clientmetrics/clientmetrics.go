// Package clientmetrics exports client-go's REST client metrics in
// Prometheus with the names Kubernetes' components use, so an SRE sees how
// the control-plane loops fare against the API server: requests by status
// code (429s and 5xx are the alerts), their latency, the time spent waiting
// on the client's own rate limiter (a loop throttled by its QPS), and
// retries, and the sizes of requests and responses.
package clientmetrics

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/metrics"
)

// latencyBuckets and sizeBuckets are component-base's.
var (
	latencyBuckets = []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60}
	sizeBuckets    = []float64{64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216}
)

// Metrics are the collectors client-go reports to once Register has run.
type Metrics struct {
	latency, rateLimiter      *prometheus.HistogramVec
	requestSize, responseSize *prometheus.HistogramVec
	results, retries          *prometheus.CounterVec
}

var (
	registerOnce sync.Once
	registered   *Metrics
)

// Register makes every client-go client of the process report to one set
// of metrics and returns it, the same on every call: client-go takes its
// metric hooks once per process.
func Register() *Metrics {
	registerOnce.Do(func() {
		m := &Metrics{
			latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rest_client_request_duration_seconds",
				Help: "Request latency in seconds. Broken down by verb, and host.", Buckets: latencyBuckets}, []string{"verb", "host"}),
			rateLimiter: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rest_client_rate_limiter_duration_seconds",
				Help: "Client side rate limiter latency in seconds. Broken down by verb, and host.", Buckets: latencyBuckets}, []string{"verb", "host"}),
			requestSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rest_client_request_size_bytes",
				Help: "Request size in bytes. Broken down by verb and host.", Buckets: sizeBuckets}, []string{"verb", "host"}),
			responseSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rest_client_response_size_bytes",
				Help: "Response size in bytes. Broken down by verb and host.", Buckets: sizeBuckets}, []string{"verb", "host"}),
			results: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rest_client_requests_total",
				Help: "Number of HTTP requests, partitioned by status code, method, and host."}, []string{"code", "method", "host"}),
			retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rest_client_request_retries_total",
				Help: "Number of request retries, partitioned by status code, verb, and host."}, []string{"code", "verb", "host"}),
		}
		metrics.Register(metrics.RegisterOpts{
			RequestLatency:     latencyAdapter{m.latency},
			RateLimiterLatency: latencyAdapter{m.rateLimiter},
			RequestSize:        sizeAdapter{m.requestSize},
			ResponseSize:       sizeAdapter{m.responseSize},
			RequestResult:      resultAdapter{m.results},
			RequestRetry:       retryAdapter{m.retries},
		})
		registered = m
	})
	return registered
}

// Collectors are what a Prometheus registry takes.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.latency, m.rateLimiter, m.requestSize, m.responseSize, m.results, m.retries}
}

type latencyAdapter struct{ h *prometheus.HistogramVec }

// Observe drops the URL's path, as Kubernetes does: one series per
// object name would be unbounded.
func (a latencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	a.h.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}

type sizeAdapter struct{ h *prometheus.HistogramVec }

func (a sizeAdapter) Observe(_ context.Context, verb, host string, size float64) {
	a.h.WithLabelValues(verb, host).Observe(size)
}

type resultAdapter struct{ c *prometheus.CounterVec }

func (a resultAdapter) Increment(_ context.Context, code, method, host string) {
	a.c.WithLabelValues(code, method, host).Inc()
}

type retryAdapter struct{ c *prometheus.CounterVec }

func (a retryAdapter) IncrementRetry(_ context.Context, code, method, host string) {
	a.c.WithLabelValues(code, method, host).Inc()
}
