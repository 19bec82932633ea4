package runner

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// QueueMetrics are client-go's workqueue metrics in Prometheus, with
// kube-controller-manager's names (workqueue_depth, workqueue_adds_total,
// workqueue_queue_duration_seconds, workqueue_work_duration_seconds,
// workqueue_unfinished_work_seconds,
// workqueue_longest_running_processor_seconds, workqueue_retries_total),
// one series per queue name. A queue rebuilt under the same name (the
// next leadership term) continues its series.
type QueueMetrics struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, work              *prometheus.HistogramVec
}

var _ workqueue.MetricsProvider = (*QueueMetrics)(nil)

// NewQueueMetrics builds the collectors; register them with Collectors
// and make queues report to them with UseQueueMetrics.
func NewQueueMetrics() *QueueMetrics {
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: name, Help: help}, []string{"name"})
	}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: name, Help: help}, []string{"name"})
	}
	histogram := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: name, Help: help,
			Buckets: prometheus.ExponentialBuckets(10e-9, 10, 10)}, []string{"name"})
	}
	return &QueueMetrics{
		depth:   gauge("depth", "Current depth of workqueue"),
		adds:    counter("adds_total", "Total number of adds handled by workqueue"),
		latency: histogram("queue_duration_seconds", "How long in seconds an item stays in workqueue before being requested."),
		work:    histogram("work_duration_seconds", "How long in seconds processing an item from workqueue takes."),
		unfinished: gauge("unfinished_work_seconds", "How many seconds of work has done that is in progress and hasn't been observed by work_duration. "+
			"Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases."),
		longest: gauge("longest_running_processor_seconds", "How many seconds has the longest running processor for workqueue been running."),
		retries: counter("retries_total", "Total number of retries handled by workqueue"),
	}
}

// Collectors are what a Prometheus registry takes.
func (m *QueueMetrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.depth, m.adds, m.latency, m.work, m.unfinished, m.longest, m.retries}
}

func (m *QueueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return m.depth.WithLabelValues(name)
}

func (m *QueueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return m.adds.WithLabelValues(name)
}

func (m *QueueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return m.latency.WithLabelValues(name)
}

func (m *QueueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return m.work.WithLabelValues(name)
}

func (m *QueueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.unfinished.WithLabelValues(name)
}

func (m *QueueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.longest.WithLabelValues(name)
}

func (m *QueueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return m.retries.WithLabelValues(name)
}

// queueMetrics is where queues made by NewQueue report; nil leaves them
// without metrics (tests, processes that serve no /metrics).
var queueMetrics atomic.Pointer[QueueMetrics]

// UseQueueMetrics makes queues built from now on report to m. The
// process serving /metrics calls it once, before its controllers start,
// as client-go's workqueue.SetProvider is meant to be used.
func UseQueueMetrics(m *QueueMetrics) { queueMetrics.Store(m) }
