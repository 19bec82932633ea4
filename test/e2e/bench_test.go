package e2e

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiffkube/skiff/kubelet/testimage"
)

// benchPods is how many pods one measurement starts, as issue 6 asks.
const benchPods = 100

// BenchmarkPodStartupLatency measures pod startup as Kubernetes' SLO
// defines it — pod created → Running, seen through a watch — for 100 pods
// on one `skiff server` node with real containerd and a local image,
// created at SKIFF_BENCH_QPS pods per second (default 10, as Kubernetes'
// density test). It reports p50/p99 and the server process's CPU time and
// resident memory with the 100 pods running (API server, controllers,
// scheduler and agent together), and the server's and containerd's CPU
// use while the 100 pods run and nothing changes. Run with -bench PodStartupLatency
// -benchtime 1x.
func BenchmarkPodStartupLatency(b *testing.B) {
	qps := 10.0
	if v := os.Getenv("SKIFF_BENCH_QPS"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			b.Fatalf("SKIFF_BENCH_QPS=%q: want a positive number", v)
		}
		qps = f
	}
	s, _ := startNodeServer(b)
	rc, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	rc.QPS, rc.Burst = 200, 400
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	var all []time.Duration
	var cpu, rss []float64
	var steady steadyUsage
	b.ResetTimer()
	for iter := 0; iter < b.N; iter++ {
		lat, c, r, st := startupRound(b, ctx, pods, s.cmd.Process.Pid, qps, iter)
		all = append(all, lat...)
		cpu, rss = append(cpu, c), append(rss, r)
		steady = st
	}
	b.StopTimer()
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	pct := func(p float64) float64 { return float64(all[int(float64(len(all)-1)*p)].Milliseconds()) }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(cpu[len(cpu)-1], "server-cpu-s")
	b.ReportMetric(rss[len(rss)-1], "server-rss-MiB")
	b.ReportMetric(steady.server, "steady-server-cpu-%")
	b.ReportMetric(steady.containerd, "steady-containerd-cpu-%")
	b.Logf("%d pods at %.0f/s: p50 %.0f ms, p99 %.0f ms, max %v; server CPU %.1f s, RSS %.0f MiB with %d pods running",
		len(all), qps, pct(0.50), pct(0.99), all[len(all)-1].Round(time.Millisecond), cpu[len(cpu)-1], rss[len(rss)-1], benchPods)
	b.Logf("with %d pods running and nothing changing, over %v: server (API server, controllers, scheduler, agent) %.1f%% of a CPU, containerd %.1f%%",
		benchPods, steadyWindow, steady.server, steady.containerd)
}

// steadyWindow is how long the CPU use of a node with its pods running and
// nothing changing is sampled: the agent's cost of keeping pods (periodic
// syncs, probes, status) and what it asks of containerd.
const steadyWindow = 20 * time.Second

// steadyUsage is CPU use in percent of one CPU over steadyWindow.
type steadyUsage struct{ server, containerd float64 }

func measureSteady(b *testing.B, serverPid int) steadyUsage {
	ctrd := containerdPid(b)
	s0, _ := processUsage(b, serverPid)
	c0, _ := processUsage(b, ctrd)
	time.Sleep(steadyWindow)
	s1, _ := processUsage(b, serverPid)
	c1, _ := processUsage(b, ctrd)
	w := steadyWindow.Seconds()
	return steadyUsage{server: (s1 - s0) / w * 100, containerd: (c1 - c0) / w * 100}
}

// containerdPid finds the containerd daemon's process.
func containerdPid(b *testing.B) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile("/proc/" + e.Name() + "/comm"); err == nil && strings.TrimSpace(string(comm)) == "containerd" {
			return pid
		}
	}
	b.Fatal("no containerd process found")
	return 0
}

// startupRound creates benchPods pods, returns their create→Running
// latencies and the server's CPU seconds and RSS once all run, then deletes
// them and waits until they are gone.
func startupRound(b *testing.B, ctx context.Context, pods interface {
	Create(context.Context, *corev1.Pod, metav1.CreateOptions) (*corev1.Pod, error)
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
	DeleteCollection(context.Context, metav1.DeleteOptions, metav1.ListOptions) error
	List(context.Context, metav1.ListOptions) (*corev1.PodList, error)
}, pid int, qps float64, iter int) ([]time.Duration, float64, float64, steadyUsage) {
	label := fmt.Sprintf("bench-round=%d", iter)
	w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: label})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	created := make(map[string]time.Time, benchPods)
	var mu sync.Mutex
	runningAt := map[string]time.Time{}
	allRunning := make(chan struct{})
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || p.Status.Phase != corev1.PodRunning {
				continue
			}
			mu.Lock()
			if _, dup := runningAt[p.Name]; !dup {
				runningAt[p.Name] = time.Now()
				if len(runningAt) == benchPods {
					close(allRunning)
				}
			}
			mu.Unlock()
		}
	}()
	zero := int64(0)
	interval := time.Duration(float64(time.Second) / qps)
	next := time.Now()
	for i := 0; i < benchPods; i++ {
		time.Sleep(time.Until(next))
		next = next.Add(interval)
		name := fmt.Sprintf("bench-%d-%d", iter, i)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"bench-round": strconv.Itoa(iter)}},
			Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &zero, Containers: []corev1.Container{{
				Name: "app", Image: testimage.Ref, Args: []string{"sleep"}, ImagePullPolicy: corev1.PullNever,
			}}},
		}
		created[name] = time.Now()
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-allRunning:
	case <-time.After(5 * time.Minute):
		mu.Lock()
		n := len(runningAt)
		mu.Unlock()
		b.Fatalf("only %d of %d pods Running after 5 minutes", n, benchPods)
	}
	cpu, rss := processUsage(b, pid)
	steady := measureSteady(b, pid)
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: label}); err != nil {
		b.Fatal(err)
	}
	for end := time.Now().Add(3 * time.Minute); ; time.Sleep(time.Second) {
		l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: label})
		if err == nil && len(l.Items) == 0 {
			break
		}
		if time.Now().After(end) {
			b.Fatalf("bench pods not gone after 3 minutes")
		}
	}
	// The API forgets pods deleted with grace 0 at once; the agent stops
	// their containers after. Wait for it, so that the next round (or the
	// server's shutdown) does not overlap that work.
	for end := time.Now().Add(3 * time.Minute); leftovers(b) != ""; time.Sleep(500 * time.Millisecond) {
		if time.Now().After(end) {
			b.Fatalf("bench containers still here 3 minutes after their pods were deleted:\n%s", leftovers(b))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	out := make([]time.Duration, 0, benchPods)
	for name, at := range runningAt {
		out = append(out, at.Sub(created[name]))
	}
	return out, cpu, rss, steady
}

// processUsage is a process's CPU seconds (user+system) and resident
// memory in MiB.
func processUsage(b *testing.B, pid int) (cpuSeconds, rssMiB float64) {
	return pidCPU(b, pid).Seconds(), pidRSSMB(b, pid)
}
