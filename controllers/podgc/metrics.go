package podgc

import "github.com/prometheus/client_golang/prometheus"

// The pod garbage collector's metrics, with kube-controller-manager's names and labels. They count
// from the start of the process; a process serving /metrics registers Collectors.
var (
	forceDeletes = prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "pod_gc_collector", Name: "force_delete_pods_total",
		Help: "Number of pods that are being forcefully deleted since the Pod GC Controller started."}, []string{"namespace", "reason"})
	forceDeleteErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "pod_gc_collector", Name: "force_delete_pod_errors_total",
		Help: "Number of errors encountered when forcefully deleting the pods since the Pod GC Controller started."}, []string{"namespace", "reason"})
)

// Values of the metrics' reason label, Kubernetes'.
const (
	metricTerminated   = "terminated"
	metricOrphaned     = "orphaned"
	metricUnscheduled  = "unscheduled"
	metricOutOfService = "out-of-service"
)

// metricReasons maps the controller's event reasons to the metrics' reason label.
var metricReasons = map[string]string{
	ReasonTerminated:   metricTerminated,
	ReasonOrphaned:     metricOrphaned,
	ReasonUnbound:      metricUnscheduled,
	ReasonOutOfService: metricOutOfService,
}

// Collectors are pod_gc_collector_force_delete_pods_total and
// pod_gc_collector_force_delete_pod_errors_total, by namespace and reason.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{forceDeletes, forceDeleteErrors}
}
