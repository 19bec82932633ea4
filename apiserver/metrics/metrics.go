package metrics

import (
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds one server's collectors in its own registry (no globals, so
// several servers can run in one process, as tests do).
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	inflight *prometheus.GaugeVec
}

// New creates the collectors, plus the Go runtime and process collectors
// and extra, other parts' collectors (the store's).
func New(extra ...prometheus.Collector) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Counter of API requests by verb, group, version, resource, subresource, scope-less, and HTTP response code.",
		}, []string{"verb", "resource", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Response latency distribution in seconds for each verb and resource (watch excluded).",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"verb", "resource"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_current_inflight_requests",
			Help: "Requests being served, by kind (mutating, readOnly, watch).",
		}, []string{"request_kind"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.inflight,
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(gcRuntimeMetrics)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(extra...)
	return m
}

// gcRuntimeMetrics adds to the Go collector's defaults what says how much
// the garbage collector costs and why: its CPU time
// (go_cpu_classes_gc_total_cpu_seconds_total, against
// process_cpu_seconds_total), the live heap it keeps (go_gc_heap_live_bytes)
// and the heap's free slots in spans in use (go_memory_classes_heap_unused_bytes),
// which count against the server's soft memory limit (--gc-memory-limit).
var gcRuntimeMetrics = collectors.GoRuntimeMetricsRule{
	Matcher: regexp.MustCompile(`^(/cpu/classes/gc/total:cpu-seconds|/gc/heap/live:bytes|/memory/classes/heap/unused:bytes)$`),
}

// Observe records one finished request. verb is the API verb ("list",
// "watch") or the lower-case HTTP method for non-resource paths.
func (m *Metrics) Observe(verb, resource string, code int, d time.Duration) {
	m.requests.WithLabelValues(verb, resource, strconv.Itoa(code)).Inc()
	if verb != "watch" {
		m.latency.WithLabelValues(verb, resource).Observe(d.Seconds())
	}
}

// Inflight tracks a request in flight; call the returned func when done.
func (m *Metrics) Inflight(kind string) func() {
	g := m.inflight.WithLabelValues(kind)
	g.Inc()
	return g.Dec
}

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}
