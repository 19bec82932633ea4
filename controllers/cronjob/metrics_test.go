package cronjob

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// skewSnapshot reads cronjob_controller_job_creation_skew_duration_seconds: its count, its sum,
// and the cumulative count of each bucket by upper bound.
func skewSnapshot(t *testing.T) (count uint64, sum float64, buckets map[float64]uint64) {
	t.Helper()
	var m dto.Metric
	if err := creationSkew.Write(&m); err != nil {
		t.Fatal(err)
	}
	h := m.GetHistogram()
	buckets = map[float64]uint64{}
	for _, b := range h.GetBucket() {
		buckets[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	return h.GetSampleCount(), h.GetSampleSum(), buckets
}

// As kube-controller-manager's, a Job created for a scheduled run is observed in
// cronjob_controller_job_creation_skew_duration_seconds as its creation time less the schedule
// time, in buckets of 1 s doubling to 512 s; a Job found already made is not observed again.
func TestJobCreationSkewObserved(t *testing.T) {
	fx := newFixture(t, newCronJob("* * * * *", lastScheduled(now.Add(-90*time.Second))))
	// The API server stamps the creation time: the run due at 12:00:00 is created at 12:00:30.
	fx.client.PrependReactor("create", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		a.(k8stesting.CreateAction).GetObject().(*batchv1.Job).CreationTimestamp = metav1.NewTime(now)
		return false, nil, nil
	})
	count, sum, buckets := skewSnapshot(t)
	fx.sync(t)
	if n := len(fx.created()); n != 1 {
		t.Fatalf("created %d jobs, want 1", n)
	}
	gotCount, gotSum, gotBuckets := skewSnapshot(t)
	if gotCount-count != 1 || gotSum-sum != 30 {
		t.Fatalf("observed %d samples summing %vs, want one of 30s", gotCount-count, gotSum-sum)
	}
	if len(gotBuckets) != 10 || gotBuckets[16]-buckets[16] != 0 || gotBuckets[32]-buckets[32] != 1 || gotBuckets[512]-buckets[512] != 1 {
		t.Fatalf("buckets before %v, after %v: want 30s in (16, 32] of ten, 1 to 512", buckets, gotBuckets)
	}

	// The same run again, its Job already made though the cache does not show it yet (a status
	// write lost): the create finds it, and nothing more is observed.
	existing, _ := fx.client.BatchV1().Jobs("ns").Get(t.Context(), fx.created()[0].Name, metav1.GetOptions{})
	fx = newFixture(t, newCronJob("* * * * *", lastScheduled(now.Add(-90*time.Second))))
	if err := fx.client.Tracker().Add(existing); err != nil {
		t.Fatal(err)
	}
	fx.sync(t)
	if n := len(fx.created()); n != 1 {
		t.Fatalf("tried %d creates, want the one finding the Job there", n)
	}
	if n, _, _ := skewSnapshot(t); n != gotCount {
		t.Fatalf("a Job found already created was observed again: %d samples, want %d", n, gotCount)
	}
}
