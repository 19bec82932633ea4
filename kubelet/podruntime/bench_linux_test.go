//go:build linux

package podruntime

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkPodStartup measures, per pod, the time from the first SyncPod
// to a running container (network namespace, snapshot, task start), with
// real containerd and a local image, and reports p50/p99. Run it with e.g.
// -bench PodStartup -benchtime 100x.
func BenchmarkPodStartup(b *testing.B) {
	e := newEnv(b, "sktbench0", "10.251.40.0/22")
	ctx := context.Background()
	latencies := make([]time.Duration, 0, b.N)
	pods := make([]*corev1.Pod, 0, b.N)
	defer func() {
		for _, p := range pods {
			e.rt.KillPod(context.Background(), p, 0)
		}
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pod := newTestPod(fmt.Sprintf("bench-%d", i))
		pod.Spec.Containers = []corev1.Container{appContainer("main", "sleep")}
		pods = append(pods, pod)
		ip := fmt.Sprintf("10.251.%d.%d", 40+i/250, 2+i%250)
		start := time.Now()
		for {
			st, err := e.rt.SyncPod(ctx, pod, ip)
			if err != nil {
				b.Fatal(err)
			}
			if st.Containers[0].State.Running != nil {
				break
			}
			if time.Since(start) > waitLong {
				b.Fatalf("pod %d not running after %v: %+v", i, waitLong, st.Containers[0].State)
			}
			time.Sleep(10 * time.Millisecond)
		}
		latencies = append(latencies, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	pct := func(p float64) time.Duration { return latencies[int(float64(len(latencies)-1)*p)] }
	b.ReportMetric(float64(pct(0.50).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(pct(0.99).Milliseconds()), "p99-ms")
}
