package runner

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestQueuesReportToQueueMetrics: a queue built after UseQueueMetrics
// counts its adds, depth, retries and work under its name; one built
// before (or without) reports nothing.
func TestQueuesReportToQueueMetrics(t *testing.T) {
	m := NewQueueMetrics()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.Collectors()...)
	silent := NewQueue("silent")
	UseQueueMetrics(m)
	defer UseQueueMetrics(nil)
	q := NewQueue("pods")
	defer q.ShutDown()
	defer silent.ShutDown()
	silent.Add("x")
	q.Add("ns/a")
	q.Add("ns/b")
	key, _ := q.Get()
	q.Done(key)
	// A retry counts at once (its add comes after the back-off).
	retry := NewQueue("retry")
	defer retry.ShutDown()
	retry.AddRateLimited("ns/d")

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			name := ""
			for _, l := range s.GetLabel() {
				if l.GetName() == "name" {
					name = l.GetValue()
				}
			}
			key := f.GetName() + "/" + name
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				got[key] = s.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				got[key] = s.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				got[key] = float64(s.GetHistogram().GetSampleCount())
			}
		}
	}
	for key, want := range map[string]float64{
		"workqueue_adds_total/pods":             2,
		"workqueue_depth/pods":                  1,
		"workqueue_retries_total/retry":         1,
		"workqueue_work_duration_seconds/pods":  1,
		"workqueue_queue_duration_seconds/pods": 1,
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v (all: %v)", key, got[key], want, got)
		}
	}
	if _, ok := got["workqueue_adds_total/silent"]; ok {
		t.Errorf("a queue built before UseQueueMetrics reports: %v", got)
	}
}
