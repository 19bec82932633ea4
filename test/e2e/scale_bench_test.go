package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// The cluster-scale benchmarks of issue 5. Each runs its workload once
// whatever b.N is (run them with -benchtime=1x) against a real `skiff
// server` and hollow nodes (`skiff agent --runtime fake --count N`), and
// reports its figures as benchmark metrics:
//
//	go test ./test/e2e -run '^$' -bench 'Scheduling|PodStartup' -benchtime=1x -timeout 30m
//
// Targets on a 2-core machine: scheduling at least 1,000 pods/s; pod
// startup p99 at most 2 s; server RSS under 500 MB with 1,000 nodes and
// 10,000 pods, under 100 MB idle. SKIFF_BENCH_PODS overrides the pod count,
// SKIFF_BENCH_NODES the node counts of the scheduling benchmark ("100" or
// "100,1000"). SKIFF_BENCH_CPUPROFILE=FILE has the scheduling benchmark
// take a CPU profile of the server from its first create on
// (SKIFF_BENCH_CPUPROFILE_SECONDS long, default 20), and
// SKIFF_BENCH_PROFILE_DIR names a directory for the server's heap profile
// at the loaded point.

// BenchmarkSchedulingThroughput is scheduler_perf's SchedulingBasic shape:
// N hollow nodes, 10,000 pods created by 32 clients, pods/s from the first
// create to the last binding observed by a watch. It also reports the
// server's resident memory idle (before any node) and at the end.
func BenchmarkSchedulingThroughput(b *testing.B) {
	for _, nodes := range scaleBenchNodes(b, []int{1000, 5000}) {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			pods := scaleBenchPods(b, 10000)
			// /24 per node: 5,000 nodes need more than the default /16.
			s := startServer(b, "--cluster-cidr", "10.0.0.0/8")
			cs := benchClient(b, s)
			idle := idleRSSMB(b, s, cs)
			agent := startHollowNodes(b, s, "--count", strconv.Itoa(nodes), "--node-name", "hollow", "--capacity", "cpu=32,memory=256Gi,pods=110")
			waitNodesReady(b, cs, nodes)
			agentIdle := pidRSSMB(b, agent.Process.Pid)
			tr := trackPods(b, cs, "bench")
			profiled := profileServer(b, cs)
			cpu0, gc0 := pidCPU(b, s.cmd.Process.Pid), serverMetric(b, cs, gcCPUMetric)
			ops0, commits0 := serverMetric(b, cs, commitOpsSum), serverMetric(b, cs, commitOpsCount)
			agentCPU0, clientCPU0 := pidCPU(b, agent.Process.Pid), pidCPU(b, os.Getpid())
			serverIO0, agentIO0 := pidSyscalls(b, s.cmd.Process.Pid), pidSyscalls(b, agent.Process.Pid)
			start := time.Now()
			createPods(b, cs, "bench", pods)
			created := time.Since(start)
			bound := tr.waitAll(b, pods, func(p podTimes) time.Time { return p.bound })
			secs := bound.Sub(start).Seconds()
			serverCPU := pidCPU(b, s.cmd.Process.Pid) - cpu0
			// The runtime's estimate, updated as each GC cycle ends.
			gcCPU := serverMetric(b, cs, gcCPUMetric) - gc0
			ops, commits := serverMetric(b, cs, commitOpsSum)-ops0, serverMetric(b, cs, commitOpsCount)-commits0
			// The machine's two cores are shared by the server, the hollow
			// nodes and this process's 32 creating clients and watch: what
			// each of them spends per pod says where pods/s is lost.
			agentCPU := pidCPU(b, agent.Process.Pid) - agentCPU0
			clientCPU := pidCPU(b, os.Getpid()) - clientCPU0
			serverIO, agentIO := pidSyscalls(b, s.cmd.Process.Pid).minus(serverIO0), pidSyscalls(b, agent.Process.Pid).minus(agentIO0)
			profiled()
			b.ReportMetric(float64(serverCPU.Microseconds())/1000/float64(pods), "server-cpu-ms/pod")
			b.ReportMetric(float64(agentCPU.Microseconds())/1000/float64(pods), "agent-cpu-ms/pod")
			b.ReportMetric(float64(clientCPU.Microseconds())/1000/float64(pods), "client-cpu-ms/pod")
			// The soft memory limit (--gc-memory-limit) trades this CPU
			// for resident memory.
			b.ReportMetric(100*gcCPU/serverCPU.Seconds(), "server-gc-%")
			b.ReportMetric(ops/commits, "server-ops/commit")
			b.Logf("%d nodes: %.0f store operations per pod in %.0f commits", nodes, ops/float64(pods), commits)
			// On a virtual machine a system call costs microseconds: how
			// many each pod takes says what batching writes could save.
			b.Logf("%d nodes: per pod the server made %.1f read and %.1f write system calls, the hollow nodes %.1f and %.1f",
				nodes, float64(serverIO.reads)/float64(pods), float64(serverIO.writes)/float64(pods),
				float64(agentIO.reads)/float64(pods), float64(agentIO.writes)/float64(pods))
			b.Logf("%d nodes: server CPU from the first create to the last binding %.1fs (%.2f ms per pod, %.0f%% of one core)",
				nodes, serverCPU.Seconds(), float64(serverCPU.Microseconds())/1000/float64(pods), 100*serverCPU.Seconds()/secs)
			// All three share the machine: when together they keep every
			// core busy, their CPU per pod, not any wait, sets pods/s.
			allMS := float64((serverCPU + agentCPU + clientCPU).Microseconds()) / 1000 / float64(pods)
			cores := runtime.NumCPU()
			b.ReportMetric(float64(cores)*1000/allMS, "cpu-bound-pods/s")
			b.Logf("%d nodes: server, hollow nodes and clients together %.2f ms of CPU per pod, %.0f%% of the %d cores over the run; at that cost the cores bind at most %.0f pods/s",
				nodes, allMS, 100*allMS*float64(pods)/1000/secs/float64(cores), cores, float64(cores)*1000/allMS)
			tr.waitAll(b, pods, func(p podTimes) time.Time { return p.running })
			saveServerState(b, s, cs, fmt.Sprintf("nodes-%d", nodes))
			b.ReportMetric(float64(pods)/secs, "pods/s")
			b.ReportMetric(idle, "idle-rss-MB")
			b.ReportMetric(rssMB(b, s), "loaded-rss-MB")
			// File-backed pages are the binary's code and the database
			// file SQLite maps; anonymous ones the heaps.
			b.Logf("%d nodes: server RSS with the pods: %.0f MB anonymous, %.0f MB file-backed", nodes,
				procStatusMB(b, s.cmd.Process.Pid, "RssAnon"), procStatusMB(b, s.cmd.Process.Pid, "RssFile"))
			b.ReportMetric(pidRSSMB(b, agent.Process.Pid), "agent-rss-MB")
			b.ReportMetric(pidCPU(b, s.cmd.Process.Pid).Seconds(), "server-cpu-s")
			b.Logf("%d nodes: hollow node process RSS %.0f MB with no pods, %.0f MB with the pods", nodes, agentIdle, pidRSSMB(b, agent.Process.Pid))
			b.Logf("%d nodes: %d pods created in %.1fs (%.0f/s)", nodes, pods, created.Seconds(), float64(pods)/created.Seconds())
			b.Logf("%d nodes: %d pods bound in %.1fs = %.0f pods/s (target >= 1000); server RSS idle %.0f MB (target < 100), with the nodes and pods %.0f MB (target < 500 at 1,000 nodes)",
				nodes, pods, secs, float64(pods)/secs, idle, rssMB(b, s))
			// Last: listing the Events reads the database and grows the RSS.
			reportPodEvents(b, cs, "bench", pods)
		})
	}
}

// BenchmarkPodStartup is the pod startup latency of a 1,000-replica
// Deployment on 100 hollow nodes: for each pod, from its creation to
// Running, both observed by a watch.
func BenchmarkPodStartup(b *testing.B) {
	replicas := scaleBenchPods(b, 1000)
	s := startServer(b)
	cs := benchClient(b, s)
	startHollowNodes(b, s, "--count", "100", "--node-name", "hollow", "--capacity", "cpu=32,memory=256Gi,pods=110")
	waitNodesReady(b, cs, 100)
	tr := trackPods(b, cs, "bench")
	n := int32(replicas)
	labels := map[string]string{"app": "startup"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "startup"}, Spec: appsv1.DeploymentSpec{
		Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: benchPodSpec()},
	}}
	if _, err := cs.AppsV1().Deployments("bench").Create(context.Background(), dep, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	tr.waitAll(b, replicas, func(p podTimes) time.Time { return p.running })
	var lat []time.Duration
	for _, p := range tr.snapshot() {
		lat = append(lat, p.running.Sub(p.added))
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	b.ReportMetric(p50.Seconds()*1000, "p50-ms")
	b.ReportMetric(p99.Seconds()*1000, "p99-ms")
	b.Logf("%d replicas on 100 nodes: create -> Running p50 %v, p99 %v (target p99 <= 2s)", replicas, p50.Round(time.Millisecond), p99.Round(time.Millisecond))
}

func scaleBenchPods(b *testing.B, def int) int {
	if v := os.Getenv("SKIFF_BENCH_PODS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("SKIFF_BENCH_PODS=%q: want a positive number", v)
		}
		return n
	}
	return def
}

func scaleBenchNodes(b *testing.B, def []int) []int {
	v := os.Getenv("SKIFF_BENCH_NODES")
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("SKIFF_BENCH_NODES=%q: want positive numbers separated by commas", v)
		}
		out = append(out, n)
	}
	return out
}

func benchClient(b *testing.B, s *server) kubernetes.Interface {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 10000, 20000
	cs := kubernetes.NewForConfigOrDie(cfg)
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	return cs
}

func benchPodSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/pause:1",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}}}}}
}

// profileServer takes a CPU profile of the server for
// SKIFF_BENCH_CPUPROFILE_SECONDS (default 20) from its /debug/pprof when
// SKIFF_BENCH_CPUPROFILE names a file; the returned func waits for it.
func profileServer(b *testing.B, cs kubernetes.Interface) (wait func()) {
	file := os.Getenv("SKIFF_BENCH_CPUPROFILE")
	if file == "" {
		return func() {}
	}
	secs := os.Getenv("SKIFF_BENCH_CPUPROFILE_SECONDS")
	if secs == "" {
		secs = "20"
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		data, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", secs).Timeout(10 * time.Minute).DoRaw(context.Background())
		if err != nil {
			b.Errorf("CPU profile of the server: %v", err)
			return
		}
		if err := os.WriteFile(file, data, 0o644); err != nil {
			b.Error(err)
		}
	}()
	return func() { <-done }
}

// pidCPU is the user and system CPU time a process has used so far (the
// kernel counts it in clock ticks, 100 per second on Linux).
func pidCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is the first, utime the 12th and stime the 13th.
	rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		b.Fatalf("short /proc/%d/stat: %q", pid, data)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// syscalls counts a process's read-like and write-like system calls
// (read, pread, recv...; write, pwrite, send...) as /proc/<pid>/io does.
type syscalls struct{ reads, writes int64 }

func (s syscalls) minus(o syscalls) syscalls { return syscalls{s.reads - o.reads, s.writes - o.writes} }

func pidSyscalls(b *testing.B, pid int) syscalls {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		b.Fatal(err)
	}
	var s syscalls
	for line := range strings.Lines(string(data)) {
		name, value, _ := strings.Cut(strings.TrimSpace(line), ": ")
		n, _ := strconv.ParseInt(value, 10, 64)
		switch name {
		case "syscr":
			s.reads = n
		case "syscw":
			s.writes = n
		}
	}
	return s
}

// gcCPUMetric is the server's garbage collector CPU time on /metrics.
const gcCPUMetric = "go_cpu_classes_gc_total_cpu_seconds_total"

// commitOpsSum and commitOpsCount are the server's store's group commits
// on /metrics: operations committed, and commits. A commit has a fixed
// cost (a transaction, the pages it rewrites), so operations per commit
// say how well that cost is shared.
const (
	commitOpsSum   = `skiff_storage_commit_operations_sum{dialect="sqlite"}`
	commitOpsCount = `skiff_storage_commit_operations_count{dialect="sqlite"}`
)

// serverGet GETs one of the server's non-resource paths (/metrics,
// /debug/pprof/…) with query parameters given as name, value pairs.
func serverGet(b *testing.B, cs kubernetes.Interface, path string, params ...string) []byte {
	req := cs.CoreV1().RESTClient().Get().AbsPath(path)
	for i := 0; i+1 < len(params); i += 2 {
		req = req.Param(params[i], params[i+1])
	}
	data, err := req.DoRaw(context.Background())
	if err != nil {
		b.Fatalf("GET %s: %v", path, err)
	}
	return data
}

// serverMetric reads one sample from the server's /metrics: name is the
// metric's name with its labels as /metrics prints them.
func serverMetric(b *testing.B, cs kubernetes.Interface, name string) float64 {
	data := serverGet(b, cs, "/metrics")
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				b.Fatalf("/metrics %s: %v", name, err)
			}
			return v
		}
	}
	b.Fatalf("/metrics has no %s", name)
	return 0
}

// saveServerState writes, when $SKIFF_BENCH_PROFILE_DIR is set, the
// server's heap profile (heap-<name>.pb.gz, for `go tool pprof
// -sample_index=inuse_space`), its goroutines grouped by stack
// (goroutines-<name>.txt: what each node costs in goroutines, whose stacks
// every GC cycle scans), its log so far (server-<name>.log: watchers
// behind, leases lost) and its /metrics (metrics-<name>.txt: the request
// counts by verb and resource say what each pod cost in API calls).
func saveServerState(b *testing.B, s *server, cs kubernetes.Interface, name string) {
	dir := os.Getenv("SKIFF_BENCH_PROFILE_DIR")
	if dir == "" {
		return
	}
	for _, f := range []struct {
		file string
		data []byte
	}{
		{"heap-" + name + ".pb.gz", serverGet(b, cs, "/debug/pprof/heap")},
		{"goroutines-" + name + ".txt", serverGet(b, cs, "/debug/pprof/goroutine", "debug", "1")},
		{"server-" + name + ".log", []byte(s.log.String())},
		{"metrics-" + name + ".txt", serverGet(b, cs, "/metrics")},
	} {
		path := filepath.Join(dir, f.file)
		if err := os.WriteFile(path, f.data, 0o644); err != nil {
			b.Fatal(err)
		}
		b.Logf("saved %s", path)
	}
}

// idleRSSMB is the server's resident memory once it is idle: its
// controller manager and scheduler lead (their Leases exist) and ten
// seconds have passed, so start-up is over and the loops have synced.
func idleRSSMB(b *testing.B, s *server, cs kubernetes.Interface) float64 {
	ctx := context.Background()
	for _, name := range []string{"skiff-controller-manager", "kube-scheduler"} {
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
			return err == nil, nil
		}); err != nil {
			b.Fatalf("lease kube-system/%s: %v", name, err)
		}
	}
	time.Sleep(10 * time.Second)
	b.Logf("server RSS idle: %.0f MB anonymous, %.0f MB file-backed", procStatusMB(b, s.cmd.Process.Pid, "RssAnon"), procStatusMB(b, s.cmd.Process.Pid, "RssFile"))
	return rssMB(b, s)
}

// rssMB is the server process's resident memory.
func rssMB(b *testing.B, s *server) float64 { return pidRSSMB(b, s.cmd.Process.Pid) }

// pidRSSMB is a process's resident memory.
func pidRSSMB(b *testing.B, pid int) float64 { return procStatusMB(b, pid, "VmRSS") }

// procStatusMB reads one memory figure (VmRSS, RssAnon, RssFile) of a
// process from /proc/<pid>/status.
func procStatusMB(b *testing.B, pid int, field string) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field+":" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	b.Fatalf("no %s in /proc status", field)
	return 0
}

func waitNodesReady(b *testing.B, cs kubernetes.Interface, n int) {
	// Five minutes per thousand nodes: they join, register and get a pod
	// CIDR one API call after another on two shared cores.
	timeout := time.Duration(max(1, n/1000)) * 5 * time.Minute
	start := time.Now()
	registered, ready := 0, 0
	err := wait.PollUntilContextTimeout(context.Background(), 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		registered, ready = len(nodes.Items), 0
		for _, node := range nodes.Items {
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && node.Spec.PodCIDR != "" {
					ready++
				}
			}
		}
		return ready == n, nil
	})
	if err != nil {
		b.Fatalf("%d hollow nodes not ready after %v: %d registered, %d Ready with a pod CIDR (%v)", n, timeout, registered, ready, err)
	}
	b.Logf("%d hollow nodes Ready in %.0fs", n, time.Since(start).Seconds())
}

// createPods creates n pods with 32 concurrent clients.
func createPods(b *testing.B, cs kubernetes.Interface, ns string, n int) {
	noToken := false
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for w := 0; w < 32; w++ {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%05d", i)}, Spec: benchPodSpec()}
				// scheduler_perf runs its API server without ServiceAccount
				// admission, so SchedulingBasic's pods carry no token volume;
				// these opt out to be the same pods. (With the volume each
				// pod is about a third bigger to encode, store and decode.)
				pod.Spec.AutomountServiceAccountToken = &noToken
				if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// podTimes are when a watch saw a pod added, bound and running.
type podTimes struct{ added, bound, running time.Time }

type podTracker struct {
	mu   sync.Mutex
	pods map[string]*podTimes
}

// trackPods records, through an informer, when each pod of ns is first
// seen, bound to a node and Running.
func trackPods(b *testing.B, cs kubernetes.Interface, ns string) *podTracker {
	tr := &podTracker{pods: map[string]*podTimes{}}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	see := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		now := time.Now()
		tr.mu.Lock()
		defer tr.mu.Unlock()
		t := tr.pods[pod.Name]
		if t == nil {
			t = &podTimes{added: now}
			tr.pods[pod.Name] = t
		}
		if t.bound.IsZero() && pod.Spec.NodeName != "" {
			t.bound = now
		}
		if t.running.IsZero() && pod.Status.Phase == corev1.PodRunning {
			t.running = now
		}
	}
	inf := f.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, cur any) { see(cur) }}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return tr
}

func (tr *podTracker) snapshot() []podTimes {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := make([]podTimes, 0, len(tr.pods))
	for _, p := range tr.pods {
		out = append(out, *p)
	}
	return out
}

// waitAll waits until n pods have the time at set and returns the latest.
func (tr *podTracker) waitAll(b *testing.B, n int, at func(podTimes) time.Time) time.Time {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		var last time.Time
		done := 0
		for _, p := range tr.snapshot() {
			if t := at(p); !t.IsZero() {
				done++
				if t.After(last) {
					last = t
				}
			}
		}
		if done >= n {
			return last
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d pods got there in 10 minutes", done, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// podEventReasons are the Events every benchmark pod should get: the
// scheduler's, then its kubelet's for its one container.
var podEventReasons = []string{"Scheduled", "Pulled", "Created", "Started"}

// reportPodEvents waits (up to a minute) for the Events of n pods in ns to
// stop arriving, then reports how many of each expected reason are missing:
// an Event recorder that drops under load shows here, not as speed.
func reportPodEvents(b *testing.B, cs kubernetes.Interface, ns string, n int) {
	count := func() map[string]int {
		got := map[string]int{}
		var cont string
		for {
			l, err := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{Limit: 5000, Continue: cont})
			if err != nil {
				b.Fatalf("listing events: %v", err)
			}
			for _, e := range l.Items {
				got[e.Reason]++
			}
			if cont = l.Continue; cont == "" {
				return got
			}
		}
	}
	var got map[string]int
	prev := -1
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Second) {
		got = count()
		total := 0
		for _, r := range podEventReasons {
			total += got[r]
		}
		if total == prev || total == n*len(podEventReasons) {
			break
		}
		prev = total
	}
	missing := 0
	var parts []string
	for _, r := range podEventReasons {
		missing += max(n-got[r], 0)
		parts = append(parts, fmt.Sprintf("%s %d", r, got[r]))
	}
	b.ReportMetric(float64(missing), "events-missing")
	b.Logf("Events of %d pods: %s (%d missing)", n, strings.Join(parts, ", "), missing)
}
