package scheduler_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/skiffkube/skiff/scheduler"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// BenchmarkSchedulingBasic has the shape of kube-scheduler's scheduler_perf
// SchedulingBasic: identical nodes (4 CPU, 32Gi, 110 pods), some pods already
// running, then a burst of pause pods (100m CPU, 500Mi) to place. It reports
// pods/s from the first create of the burst to its last successful bind,
// against client-go's fake clientset (so it measures the scheduler, its
// informers and the client, not an API server).
func BenchmarkSchedulingBasic(b *testing.B) {
	for _, tc := range []struct{ nodes, initPods, pods int }{
		{1000, 1000, 3000},
	} {
		b.Run(fmt.Sprintf("%dNodes_%dPods", tc.nodes, tc.pods), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				rate := runSchedulingBasic(b, tc.nodes, tc.initPods, tc.pods)
				b.ReportMetric(rate, "pods/s")
				b.Logf("%d nodes, %d running pods: scheduled %d pods at %.0f pods/s", tc.nodes, tc.initPods, tc.pods, rate)
			}
		})
	}
}

func benchPod(name string) *v1.Pod {
	return schedtest.MakePod().Name(name).Req("cpu", "100m", "memory", "500Mi").Obj()
}

func runSchedulingBasic(b *testing.B, nodes, initPods, pods int) float64 {
	b.StopTimer()
	var objs []runtime.Object
	for i := 0; i < nodes; i++ {
		objs = append(objs, schedtest.MakeNode().Name(fmt.Sprintf("node-%d", i)).
			Capacity("cpu", "4", "memory", "32Gi", "pods", "110").Obj())
	}
	for i := 0; i < initPods; i++ {
		p := benchPod(fmt.Sprintf("init-%d", i))
		p.Spec.NodeName = fmt.Sprintf("node-%d", i%nodes)
		objs = append(objs, p)
	}
	cs := newFakeClientset(objs...)
	var bound atomic.Int64
	done := make(chan struct{})
	cs.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() == "binding" && bound.Add(1) == int64(pods) {
			close(done)
		}
		return false, nil, nil
	})
	cfg := scheduler.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	startScheduler(b, cs, cfg)
	// Let the informers sync before the clock starts.
	time.Sleep(200 * time.Millisecond)

	b.StartTimer()
	start := time.Now()
	for i := 0; i < pods; i++ {
		if _, err := cs.CoreV1().Pods("default").Create(context.Background(), benchPod(fmt.Sprintf("p-%d", i)), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d pods bound", bound.Load(), pods)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	return float64(pods) / elapsed.Seconds()
}
