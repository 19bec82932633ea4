package job

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// jobDeletionDuration is kube-controller-manager's
// ttl_after_finished_controller_job_deletion_duration_seconds, with its buckets (100 ms doubling
// to about 27 minutes): how long after its ttlSecondsAfterFinished ran out each finished Job was
// deleted. It counts from the start of the process; a process serving /metrics registers
// Collectors.
var jobDeletionDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
	Subsystem: "ttl_after_finished_controller", Name: "job_deletion_duration_seconds",
	Help:    "Seconds from the moment a finished Job's ttlSecondsAfterFinished ran out to its deletion.",
	Buckets: prometheus.ExponentialBuckets(0.1, 2, 14),
})

// observeTTLDeletion records a Job deleted at now whose TTL ran out at expired.
func observeTTLDeletion(expired, now time.Time) {
	jobDeletionDuration.Observe(now.Sub(expired).Seconds())
}

// Collectors is ttl_after_finished_controller_job_deletion_duration_seconds.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{jobDeletionDuration}
}
