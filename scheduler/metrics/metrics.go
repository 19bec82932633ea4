package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of a scheduling attempt, as kube-scheduler labels them.
const (
	Scheduled     = "scheduled"
	Unschedulable = "unschedulable"
	Error         = "error"
)

// QueueLengths reports the pods in each part of a scheduling queue.
type QueueLengths func() (active, backoff, unschedulable, gated int)

// Metrics are the scheduler's collectors.
type Metrics struct {
	attempts        *prometheus.CounterVec
	attemptDuration *prometheus.HistogramVec
	preemption      prometheus.Counter
	victims         prometheus.Histogram
	queueingHint    *prometheus.HistogramVec
	goroutines      *prometheus.CounterVec
	goroutineTime   *prometheus.HistogramVec
	pending         *prometheus.Desc
	queue           atomic.Pointer[QueueLengths]
}

// New builds the collectors; register them with Collectors.
func New() *Metrics {
	return &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scheduler_schedule_attempts_total",
			Help: "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem.",
		}, []string{"result", "profile"}),
		attemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "scheduler_scheduling_attempt_duration_seconds",
			Help:    "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"result", "profile"}),
		preemption: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "scheduler_preemption_attempts_total",
			Help: "Total preemption attempts in the cluster till now",
		}),
		victims: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "scheduler_preemption_victims",
			Help: "Number of selected preemption victims",
			// kube-scheduler's: 1 to 64, more victims than that being rare.
			Buckets: prometheus.ExponentialBuckets(1, 2, 7),
		}),
		queueingHint: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "scheduler_queueing_hint_execution_duration_seconds",
			Help: "Duration for running a queueing hint function of a plugin.",
			// kube-scheduler's: from 10µs by a factor of 1.5, a hint being
			// a few map look-ups or one fit check.
			Buckets: prometheus.ExponentialBuckets(0.00001, 1.5, 20),
		}, []string{"plugin", "event", "hint"}),
		goroutines: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scheduler_preemption_goroutines_execution_total",
			Help: "Number of preemption goroutines executed.",
		}, []string{"result"}),
		goroutineTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "scheduler_preemption_goroutines_duration_seconds",
			Help: "Duration in seconds for running goroutines for the preemption.",
			// kube-scheduler's: from 10ms, doubling up to about 1.5 hours,
			// a goroutine making one API call per victim.
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 20),
		}, []string{"result"}),
		pending: prometheus.NewDesc("scheduler_pending_pods",
			"Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to schedule because they are gated.",
			[]string{"queue"}, nil),
	}
}

// Attach makes the pending-pods gauge report queue (the running scheduler's).
func (m *Metrics) Attach(queue QueueLengths) { m.queue.Store(&queue) }

// Attempt records one scheduling attempt of profile that ended in result
// after d (for a scheduled pod, once it is bound).
func (m *Metrics) Attempt(profile, result string, d time.Duration) {
	m.attempts.WithLabelValues(result, profile).Inc()
	m.attemptDuration.WithLabelValues(result, profile).Observe(d.Seconds())
}

// Preemption records that preemption was tried for a pod that fit nowhere.
func (m *Metrics) Preemption() { m.preemption.Inc() }

// PreemptionVictims records the number of pods one preemption chose to
// evict, when it chose them (the deletions follow asynchronously).
func (m *Metrics) PreemptionVictims(n int) { m.victims.Observe(float64(n)) }

// Results of a preemption goroutine, as kube-scheduler labels them.
const (
	GoroutineSuccess = "success"
	GoroutineError   = "error"
)

// PreemptionGoroutine records a goroutine of asynchronous preemption (the
// one that clears lower nominations and deletes the victims) that ended
// with result (GoroutineSuccess or GoroutineError) after d.
func (m *Metrics) PreemptionGoroutine(result string, d time.Duration) {
	m.goroutines.WithLabelValues(result).Inc()
	m.goroutineTime.WithLabelValues(result).Observe(d.Seconds())
}

// Hint results as the queueing-hint metric labels them.
const (
	HintQueue     = "Queue"
	HintQueueSkip = "QueueSkip"
	HintError     = "Error"
)

// QueueingHint records how long plugin's hint for event took and what it
// answered (HintQueue, HintQueueSkip or HintError).
func (m *Metrics) QueueingHint(plugin, event, hint string, d time.Duration) {
	m.queueingHint.WithLabelValues(plugin, event, hint).Observe(d.Seconds())
}

// Collectors are what a Prometheus registry takes.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.attempts, m.attemptDuration, m.preemption, m.victims, m.goroutines, m.goroutineTime, m.queueingHint, pendingCollector{m}}
}

// pendingCollector reads the attached queue at scrape time.
type pendingCollector struct{ m *Metrics }

func (c pendingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.m.pending }

func (c pendingCollector) Collect(ch chan<- prometheus.Metric) {
	var active, backoff, unschedulable, gated int
	if q := c.m.queue.Load(); q != nil {
		active, backoff, unschedulable, gated = (*q)()
	}
	for _, v := range []struct {
		queue string
		n     int
	}{{"active", active}, {"backoff", backoff}, {"unschedulable", unschedulable}, {"gated", gated}} {
		ch <- prometheus.MustNewConstMetric(c.m.pending, prometheus.GaugeValue, float64(v.n), v.queue)
	}
}
