package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Targets of the API server (issue 3); Kubernetes' own SLO for mutating
// calls is 1 s at p99.
const (
	targetMutatingP99 = 50 * time.Millisecond
	targetFanoutP99   = 100 * time.Millisecond
)

// report is everything one run measured.
type report struct {
	opts     options
	started  time.Time
	loadAvg  [2]string // at the start and at the end
	crud     []opResult
	fillTime time.Duration
	lists    []listResult
	fanout   *fanoutResult
}

// measure starts a server and runs every measurement against it.
func measure(ctx context.Context, o options) (*report, error) {
	dir, cleanup, err := workDir(o.workDir)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	rep := &report{opts: o, started: time.Now().UTC()}
	rep.loadAvg[0] = loadAverage()
	srv, err := startServer(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	cs, err := kubernetes.NewForConfig(srv.config)
	if err != nil {
		return nil, err
	}
	for _, ns := range []string{"crud", "list", "fanout"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		// The server runs no controllers here, and admission refuses pods
		// whose service account is missing: create what the service
		// account controller would.
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	if rep.crud, err = measureCRUD(ctx, o, cs, "crud"); err != nil {
		return nil, err
	}
	if rep.fillTime, err = fill(ctx, cs, "list", o.listSize); err != nil {
		return nil, fmt.Errorf("creating %d pods to list: %w", o.listSize, err)
	}
	o.logf("created %d pods to list in %s", o.listSize, rep.fillTime.Round(time.Millisecond))
	all, err := cs.CoreV1().Pods("list").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	if len(all.Items) != o.listSize {
		return nil, fmt.Errorf("the list namespace holds %d pods, want %d", len(all.Items), o.listSize)
	}
	if rep.lists, err = measureLists(ctx, o, srv.config, "list"); err != nil {
		return nil, err
	}
	if rep.fanout, err = measureFanout(ctx, o, srv.config, "fanout"); err != nil {
		return nil, err
	}
	rep.loadAvg[1] = loadAverage()
	return rep, nil
}

// percentile is the nearest-rank percentile of samples (sorted in place).
func percentile(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	slices.Sort(samples)
	rank := int(p*float64(len(samples)) + 0.999999999)
	rank = min(max(rank, 1), len(samples))
	return samples[rank-1]
}

func ms(d time.Duration) string {
	switch {
	case d >= 100*time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func met(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// markdown renders the report.
func (r *report) markdown() string {
	var b strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "%s, %d CPUs, %s/%s, %s, host %s; load average %s at the start, %s at the end.\n\n",
		r.started.Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), host, r.loadAvg[0], r.loadAvg[1])
	b.WriteString("| measurement | p50 | p99 | throughput / samples | target | met |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, op := range r.crud {
		target, ok := "", ""
		p99 := percentile(op.latencies, 0.99)
		if op.name != "get" {
			target, ok = "p99 < "+ms(targetMutatingP99), met(p99 < targetMutatingP99)
		}
		fmt.Fprintf(&b, "| %s pod, %d concurrent clients | %s | %s | %.0f/s (%d calls in %s) | %s | %s |\n",
			op.name, r.opts.clients, ms(percentile(op.latencies, 0.5)), ms(p99), op.throughput(), len(op.latencies), op.elapsed.Round(time.Millisecond), target, ok)
	}
	for _, l := range r.lists {
		fmt.Fprintf(&b, "| list %d pods as %s (%.1f MB) | %s | %s | %d runs |  |  |\n",
			r.opts.listSize, l.name, float64(l.bytes)/1e6, ms(percentile(l.latencies, 0.5)), ms(percentile(l.latencies, 0.99)), len(l.latencies))
	}
	if f := r.fanout; f != nil {
		p99 := percentile(f.latencies, 0.99)
		fmt.Fprintf(&b, "| fan-out: one write → %d watchers, write start to event received | %s | %s | %d deliveries (%d writes); slowest watcher per write %s |  p99 < %s | %s |\n",
			f.watchers, ms(percentile(f.latencies, 0.5)), ms(p99), len(f.latencies), f.writes, joinMs(f.slowestPerWrite), ms(targetFanoutP99), met(p99 < targetFanoutP99))
	}
	fmt.Fprintf(&b, "\nThe %d pods to list were created in %s by 64 clients (%.0f/s).\n", r.opts.listSize, r.fillTime.Round(time.Millisecond), float64(r.opts.listSize)/r.fillTime.Seconds())
	return b.String()
}

func joinMs(ds []time.Duration) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, ms(d))
	}
	return strings.Join(parts, ", ")
}

// loadAverage is the 1, 5 and 15 minute load average, or "unknown".
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
