package storage

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// storeMetrics are one store's Prometheus collectors. They belong to the
// Store, not to a global registry, because tests run several stores in one
// process; the server registers the Store itself (it is a
// prometheus.Collector).
//
// What they answer for an operator: how long group commits take (the
// write latency the database adds to every API write), how many writes
// each commit carries (group commit's efficiency: a commit has a fixed
// cost, so a busy server with one write per commit pays it per write),
// how often commits fail and how, how far the store's revision has
// advanced, and how many watches it is serving.
type storeMetrics struct {
	commitSeconds prometheus.Histogram
	commitOps     prometheus.Histogram
	commits       *prometheus.CounterVec
	funcs         []prometheus.Collector
}

// Outcomes of one commit attempt, the result label of
// skiff_storage_commits_total.
const (
	commitCommitted = "committed" // the transaction committed
	commitRetried   = "retried"   // failed before COMMIT; the batch is tried again
	commitFailed    = "failed"    // failed before COMMIT on the last attempt, or the store closed
	commitUnknown   = "unknown"   // COMMIT itself failed: the outcome is unknown
	commitRejected  = "rejected"  // every operation failed its precondition: nothing to write, rolled back
)

func newStoreMetrics(s *Store) *storeMetrics {
	labels := prometheus.Labels{"dialect": s.d.name()}
	m := &storeMetrics{
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:        "skiff_storage_commit_duration_seconds",
			Help:        "Duration of the store's committed write transactions (one per group commit), from BEGIN to COMMIT.",
			ConstLabels: labels,
			Buckets:     []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
		}),
		commitOps: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:        "skiff_storage_commit_operations",
			Help:        "Write operations (creates, updates, deletes, including those that failed a precondition) carried by each committed group commit.",
			ConstLabels: labels,
			Buckets:     prometheus.ExponentialBuckets(1, 2, 9), // 1 … 256 (maxBatchOps)
		}),
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "skiff_storage_commits_total",
			Help:        "Write transaction attempts by result: committed, retried (failed before COMMIT and tried again), failed (failed before COMMIT, not retried), unknown (COMMIT failed), rejected (every operation failed its precondition, nothing written).",
			ConstLabels: labels,
		}, []string{"result"}),
	}
	for _, r := range []string{commitCommitted, commitRetried, commitFailed, commitUnknown, commitRejected} {
		m.commits.WithLabelValues(r) // present at zero, so rates work from the start
	}
	m.funcs = []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "skiff_storage_revision",
			Help:        "The newest revision this store has seen committed and delivered to its watches.",
			ConstLabels: labels,
		}, func() float64 {
			s.hub.mu.Lock()
			defer s.hub.mu.Unlock()
			return float64(s.hub.rev)
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "skiff_storage_watches",
			Help:        "Watches open on the store, including those catching up after falling behind (each API watch is one, so is each of the server's own informers' watches).",
			ConstLabels: labels,
		}, func() float64 {
			s.hub.mu.Lock()
			defer s.hub.mu.Unlock()
			return float64(s.hub.open)
		}),
	}
	return m
}

// observeCommit records one commit attempt that took d and carried ops
// operations.
func (m *storeMetrics) observeCommit(result string, ops int, d time.Duration) {
	m.commits.WithLabelValues(result).Inc()
	if result == commitCommitted {
		m.commitSeconds.Observe(d.Seconds())
		m.commitOps.Observe(float64(ops))
	}
}

func (m *storeMetrics) collectors() []prometheus.Collector {
	return append([]prometheus.Collector{m.commitSeconds, m.commitOps, m.commits}, m.funcs...)
}

// Describe and Collect make the Store a prometheus.Collector: register it
// to serve its metrics (the API server does, on /metrics).
func (s *Store) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range s.metrics.collectors() {
		c.Describe(ch)
	}
}

func (s *Store) Collect(ch chan<- prometheus.Metric) {
	for _, c := range s.metrics.collectors() {
		c.Collect(ch)
	}
}
