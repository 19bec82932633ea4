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
			Help: "Counter of API requests by verb, dry run value, group, version, resource, subresource, scope, component and HTTP response code.",
		}, append(requestLabels, "code")),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component (watches excluded).",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, requestLabels),
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

// requestLabels are kube-apiserver's labels of its request metrics, in its
// order, so that queries written for Kubernetes work unchanged.
var requestLabels = []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"}

// Request is what a finished request is counted by, with kube-apiserver's
// values: Verb as its metrics report it (GET, LIST, WATCH, POST, PUT,
// PATCH, APPLY, DELETE, DELETECOLLECTION, CONNECT; the HTTP method for a
// path that names no resource), Scope "resource", "namespace", "cluster" or
// empty, DryRun the dryRun parameter's values ("All") or empty.
type Request struct {
	Verb, DryRun, Group, Version, Resource, Subresource, Scope string
	Code                                                       int
}

// Observe records one finished request.
func (m *Metrics) Observe(r Request, d time.Duration) {
	m.requests.WithLabelValues(r.Verb, r.DryRun, r.Group, r.Version, r.Resource, r.Subresource, r.Scope, component, strconv.Itoa(r.Code)).Inc()
	if r.Verb != "WATCH" {
		m.latency.WithLabelValues(r.Verb, r.DryRun, r.Group, r.Version, r.Resource, r.Subresource, r.Scope, component).Observe(d.Seconds())
	}
}

// component is the request metrics' component label: this is the API
// server, as kube-apiserver's.
const component = "apiserver"

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
