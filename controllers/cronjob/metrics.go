package cronjob

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// creationSkew is kube-controller-manager's cronjob_controller_job_creation_skew_duration_seconds,
// with its buckets (1 s doubling to 512 s): how late, after its schedule time, each Job was
// created. It counts from the start of the process; a process serving /metrics registers
// Collectors.
var creationSkew = prometheus.NewHistogram(prometheus.HistogramOpts{
	Subsystem: "cronjob_controller", Name: "job_creation_skew_duration_seconds",
	Help:    "Seconds from the time a CronJob's run was scheduled for to the creation of its Job.",
	Buckets: prometheus.ExponentialBuckets(1, 2, 10),
})

// observeCreationSkew records a Job created for the run scheduled at: the API server's creation
// time less the schedule time, as Kubernetes measures it. A Job without a creation time (no API
// server set one) tells nothing and is left out.
func observeCreationSkew(created, scheduled time.Time) {
	if created.IsZero() {
		return
	}
	creationSkew.Observe(created.Sub(scheduled).Seconds())
}

// Collectors is cronjob_controller_job_creation_skew_duration_seconds.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{creationSkew}
}
