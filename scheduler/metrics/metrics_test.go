package metrics

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gather returns each sample as "name{label=value,...}" -> value (the
// sample count for histograms).
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName() + "{"
			for i, l := range m.GetLabel() {
				if i > 0 {
					key += ","
				}
				key += l.GetName() + "=" + l.GetValue()
			}
			key += "}"
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func TestMetricsReadLikeKubeScheduler(t *testing.T) {
	m := New()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.Collectors()...)
	if got := gather(t, reg); got["scheduler_pending_pods{queue=active}"] != 0 || len(got) != 6 {
		t.Errorf("before anything: %v (want the four queues at 0, the preemption counter and victims)", got)
	}
	m.Attempt("default-scheduler", Scheduled, 3*time.Millisecond)
	m.Attempt("default-scheduler", Scheduled, 5*time.Millisecond)
	m.Attempt("default-scheduler", Unschedulable, time.Millisecond)
	m.Preemption()
	m.PreemptionVictims(3)
	m.Attach(func() (int, int, int, int) { return 4, 3, 2, 1 })
	got := gather(t, reg)
	for key, want := range map[string]float64{
		"scheduler_pending_pods{queue=active}":                                                      4,
		"scheduler_pending_pods{queue=backoff}":                                                     3,
		"scheduler_pending_pods{queue=unschedulable}":                                               2,
		"scheduler_pending_pods{queue=gated}":                                                       1,
		"scheduler_preemption_attempts_total{}":                                                     1,
		"scheduler_preemption_victims{}":                                                            1,
		"scheduler_schedule_attempts_total{profile=default-scheduler,result=scheduled}":             2,
		"scheduler_schedule_attempts_total{profile=default-scheduler,result=unschedulable}":         1,
		"scheduler_scheduling_attempt_duration_seconds{profile=default-scheduler,result=scheduled}": 2,
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v (all: %v)", key, got[key], want, got)
		}
	}
}

// scheduler_preemption_victims has kube-scheduler's buckets, so that its
// dashboards' quantiles read the same: powers of two from 1 to 64.
func TestPreemptionVictimsBuckets(t *testing.T) {
	m := New()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.Collectors()...)
	m.PreemptionVictims(3)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "scheduler_preemption_victims" {
			continue
		}
		h := f.GetMetric()[0].GetHistogram()
		var bounds []float64
		for _, b := range h.GetBucket() {
			bounds = append(bounds, b.GetUpperBound())
		}
		if want := []float64{1, 2, 4, 8, 16, 32, 64}; !slices.Equal(bounds, want) {
			t.Errorf("buckets %v, want %v", bounds, want)
		}
		if h.GetSampleSum() != 3 {
			t.Errorf("sum %v, want 3", h.GetSampleSum())
		}
		return
	}
	t.Fatal("scheduler_preemption_victims is not exported")
}

// The goroutines of asynchronous preemption are counted and timed as
// kube-scheduler v1.33 names them, by result (success or error), the
// durations in its buckets: from 10ms doubling 20 times.
func TestPreemptionGoroutinesReadLikeKubeScheduler(t *testing.T) {
	m := New()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.Collectors()...)
	m.PreemptionGoroutine(GoroutineSuccess, 30*time.Millisecond)
	m.PreemptionGoroutine(GoroutineSuccess, 2*time.Second)
	m.PreemptionGoroutine(GoroutineError, time.Second)
	got := gather(t, reg)
	for key, want := range map[string]float64{
		"scheduler_preemption_goroutines_execution_total{result=success}":  2,
		"scheduler_preemption_goroutines_execution_total{result=error}":    1,
		"scheduler_preemption_goroutines_duration_seconds{result=success}": 2,
		"scheduler_preemption_goroutines_duration_seconds{result=error}":   1,
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v (all: %v)", key, got[key], want, got)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "scheduler_preemption_goroutines_duration_seconds" {
			continue
		}
		for _, s := range f.GetMetric() {
			if s.GetLabel()[0].GetValue() != GoroutineSuccess {
				continue
			}
			h := s.GetHistogram()
			var bounds []float64
			for _, b := range h.GetBucket() {
				bounds = append(bounds, b.GetUpperBound())
			}
			want := prometheus.ExponentialBuckets(0.01, 2, 20)
			if !slices.Equal(bounds, want) {
				t.Errorf("buckets %v, want %v", bounds, want)
			}
			if math.Abs(h.GetSampleSum()-2.03) > 1e-9 {
				t.Errorf("sum %v, want 2.03 (seconds)", h.GetSampleSum())
			}
			return
		}
	}
	t.Fatal("scheduler_preemption_goroutines_duration_seconds{result=success} is not exported")
}
