package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/skiffkube/skiff/bench/kineproc"
	"github.com/skiffkube/skiff/bench/pgtemp"
	"github.com/skiffkube/skiff/bench/report"
	"github.com/skiffkube/skiff/bench/target"
	"github.com/skiffkube/skiff/bench/workload"
)

// Options configures a run. Zero values are not defaults: the command sets
// every field; tests set small ones.
type Options struct {
	// SQLite measures both stores on SQLite files.
	SQLite bool
	// PostgresDSN (a postgres:// URL) measures both stores on PostgreSQL in
	// throw-away databases DBPrefix_skiff and DBPrefix_kine; empty skips it.
	PostgresDSN string
	DBPrefix    string
	// Duration is how long each write and list measurement runs.
	Duration time.Duration
	// Writers lists the concurrent-writer counts of the create runs.
	Writers []int
	// CASWriters is the writer count of the compare-and-swap update run;
	// 0 skips it.
	CASWriters int
	// ListSizes (ascending) are the numbers of keys under one prefix whose
	// full-list latency is measured, per dialect.
	ListSizes         []int
	PostgresListSizes []int
	// WatchRate writes per second for WatchDuration are timed from write to
	// event; 0 skips the watch measurement.
	WatchRate     float64
	WatchDuration time.Duration
	// KineBin is a kine binary; empty builds kine into KineCacheDir.
	KineBin      string
	KineCacheDir string
	// WorkDir holds SQLite files and kine logs.
	WorkDir string
	// Log receives progress lines.
	Log io.Writer
}

const (
	writePrefix = "/registry/configmaps/writebench/"
	casPrefix   = "/registry/configmaps/casbench/"
	listPrefix  = "/registry/configmaps/listbench/"
	watchPrefix = "/registry/configmaps/watchbench/"
	// populateWorkers is the concurrency used to fill the list prefix.
	populateWorkers = 64
)

// Run measures everything Options asks for and returns the report. It
// fails only if nothing could be set up (no kine, no database); a
// measurement that fails becomes a "failed" cell.
func Run(ctx context.Context, o Options) (*report.Report, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if !o.SQLite && o.PostgresDSN == "" {
		return nil, errors.New("suite: nothing to measure (neither SQLite nor a Postgres DSN)")
	}
	if o.Duration <= 0 {
		return nil, errors.New("suite: Duration must be positive")
	}
	kineBin := o.KineBin
	if kineBin == "" {
		dir := o.KineCacheDir
		if dir == "" {
			var err error
			if dir, err = kineproc.DefaultCacheDir(); err != nil {
				return nil, err
			}
		}
		fmt.Fprintf(o.Log, "kine: using or building %s@%s in %s (a cold build takes minutes)\n", kineproc.Module, kineproc.Version, dir)
		var err error
		if kineBin, err = kineproc.Ensure(ctx, dir, o.Log); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(kineBin); err != nil {
		return nil, fmt.Errorf("suite: kine binary: %w", err)
	}

	rep := &report.Report{}
	pgVersion := ""
	if o.PostgresDSN != "" {
		v, err := pgtemp.ServerVersion(ctx, o.PostgresDSN)
		if err != nil {
			return nil, fmt.Errorf("suite: PostgreSQL at the given DSN: %w", err)
		}
		pgVersion = v
	}
	rep.Header = header(o, pgVersion)

	r := &runner{o: o, kineBin: kineBin, rep: rep}
	if o.SQLite {
		r.dialect(ctx, "sqlite", o.ListSizes)
	}
	if o.PostgresDSN != "" {
		r.dialect(ctx, "postgres", o.PostgresListSizes)
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	return rep, nil
}

type runner struct {
	o       Options
	kineBin string
	rep     *report.Report
}

// instance is one open store under test.
type instance struct {
	t     target.Target
	close func()
	// died reports an unexpected exit of a kine process, else nil.
	died func() error
}

// spec is one row of the table for a dialect.
type spec struct {
	id, metric string
	better     report.Direction
	target     *report.Target
}

func (r *runner) specs(dialect string, listSizes []int) []spec {
	var out []spec
	for _, n := range r.o.Writers {
		s := spec{id: fmt.Sprintf("create-%d", n), metric: fmt.Sprintf("writes/s, %d concurrent writer%s (create, 1 KiB)", n, plural(n))}
		if n == 16 {
			s.target = &report.Target{MinRatio: 5, Text: "≥ 5× kine"}
		}
		out = append(out, s)
	}
	if r.o.CASWriters > 0 {
		n := r.o.CASWriters
		out = append(out, spec{id: "cas", metric: fmt.Sprintf("writes/s, %d concurrent writer%s (CAS update of own key)", n, plural(n))})
	}
	for _, n := range listSizes {
		s := spec{id: fmt.Sprintf("list-%d", n), metric: fmt.Sprintf("list %s keys under one prefix, p50", count(n)), better: report.LowerIsBetter}
		if n == 10000 {
			s.target = &report.Target{MinRatio: 3, Text: "≥ 3× faster"}
		}
		out = append(out, s)
	}
	if r.o.WatchRate > 0 {
		where := "same instance"
		if dialect == "postgres" {
			where = "instance A → instance B"
		}
		out = append(out,
			spec{id: "watch-p50", metric: "watch latency p50, write → event, " + where, better: report.LowerIsBetter},
			spec{id: "watch-p99", metric: "watch latency p99, write → event, " + where, better: report.LowerIsBetter})
		if dialect == "postgres" {
			out[len(out)-1].target = &report.Target{SkiffBelow: 50, Text: "< 50 ms"}
		}
	}
	return out
}

func (r *runner) dialect(ctx context.Context, dialect string, listSizes []int) {
	specs := r.specs(dialect, listSizes)
	skiff := r.measure(ctx, dialect, "skiff", specs, listSizes)
	kine := r.measure(ctx, dialect, "kine", specs, listSizes)
	for _, s := range specs {
		r.rep.Add(report.Row{Dialect: dialect, Metric: s.metric, Better: s.better, Target: s.target,
			Skiff: cellOr(skiff, s.id), Kine: cellOr(kine, s.id)})
	}
}

func cellOr(cells map[string]report.Cell, id string) report.Cell {
	if c, ok := cells[id]; ok {
		return c
	}
	return report.Cell{Text: "not measured"}
}

func (r *runner) logf(dialect, system, format string, args ...any) {
	fmt.Fprintf(r.o.Log, "%s  %-8s %-5s  %s\n", time.Now().Format("15:04:05"), dialect, system, fmt.Sprintf(format, args...))
}

// measure runs every spec against one system on one dialect.
func (r *runner) measure(ctx context.Context, dialect, system string, specs []spec, listSizes []int) map[string]report.Cell {
	cells := map[string]report.Cell{}
	failAll := func(err error) map[string]report.Cell {
		r.logf(dialect, system, "cannot run: %v", err)
		r.rep.Note("%s/%s could not run: %v", dialect, system, err)
		for _, s := range specs {
			cells[s.id] = report.Failed(err)
		}
		return cells
	}

	endpoint, cleanup, err := r.database(ctx, dialect, system)
	if err != nil {
		return failAll(err)
	}
	defer cleanup()
	a, err := r.open(ctx, dialect, system, endpoint, "a")
	if err != nil {
		return failAll(err)
	}
	defer a.close()
	died := func() bool {
		if err := a.died(); err != nil {
			r.rep.Note("%s/%s: kine exited during the run: %v", dialect, system, err)
			return true
		}
		return false
	}

	for _, n := range r.o.Writers {
		if ctx.Err() != nil || died() {
			return cells
		}
		res := workload.Creates(ctx, a.t, fmt.Sprintf("%sc%d/", writePrefix, n), n, r.o.Duration)
		cells[fmt.Sprintf("create-%d", n)] = r.writeCell(dialect, system, fmt.Sprintf("create, %d writer%s", n, plural(n)), res)
	}
	if n := r.o.CASWriters; n > 0 && ctx.Err() == nil && !died() {
		res, err := workload.CASUpdates(ctx, a.t, casPrefix, n, r.o.Duration)
		if err != nil {
			cells["cas"] = report.Failed(err)
			r.logf(dialect, system, "CAS: %v", err)
		} else {
			cells["cas"] = r.writeCell(dialect, system, fmt.Sprintf("CAS update, %d writer%s", n, plural(n)), res)
		}
	}
	r.lists(ctx, dialect, system, a, listSizes, cells)

	if r.o.WatchRate > 0 && ctx.Err() == nil && !died() {
		watcher := a
		if dialect == "postgres" {
			b, err := r.open(ctx, dialect, system, endpoint, "b")
			if err != nil {
				cells["watch-p50"], cells["watch-p99"] = report.Failed(err), report.Failed(err)
				return cells
			}
			defer b.close()
			watcher = b
		}
		r.logf(dialect, system, "watch latency: %.0f writes/s for %v", r.o.WatchRate, r.o.WatchDuration)
		res, err := workload.WatchLatency(ctx, a.t, watcher.t, watchPrefix, r.o.WatchRate, r.o.WatchDuration, 10*time.Second)
		if err != nil {
			cells["watch-p50"], cells["watch-p99"] = report.Failed(err), report.Failed(err)
			r.logf(dialect, system, "watch: %v", err)
		} else {
			suffix := ""
			if res.Missing() > 0 || res.Duplicates > 0 || res.WriteErrors > 0 {
				suffix = fmt.Sprintf(" (%d of %d events missing, %d duplicates, %d write errors)", res.Missing(), res.Sent, res.Duplicates, res.WriteErrors)
				r.rep.Note("%s/%s watch: %d of %d events never arrived within 10 s after the last write, %d duplicates, %d write errors",
					dialect, system, res.Missing(), res.Sent, res.Duplicates, res.WriteErrors)
			}
			p50, p99 := report.Ms(res.Latency.P50), report.Ms(res.Latency.P99)
			cells["watch-p50"] = report.Cell{OK: res.Received > 0, Value: p50, Text: report.FormatMs(p50) + suffix}
			cells["watch-p99"] = report.Cell{OK: res.Received > 0, Value: p99, Text: fmt.Sprintf("%s (max %s)%s", report.FormatMs(p99), report.FormatMs(report.Ms(res.Latency.Max)), suffix)}
			r.logf(dialect, system, "watch: %d events, p50 %s, p99 %s, max %s%s", res.Received, report.FormatMs(p50), report.FormatMs(p99), report.FormatMs(report.Ms(res.Latency.Max)), suffix)
		}
	}
	died()
	return cells
}

// lists fills the list prefix in nested steps so that each size's prefix
// holds exactly that many keys and every size reuses the keys of the smaller
// ones: the key set of size i sits under listPrefix + "sub/"×(L-1-i).
func (r *runner) lists(ctx context.Context, dialect, system string, a *instance, sizes []int, cells map[string]report.Cell) {
	have := 0
	for i, n := range sizes {
		if ctx.Err() != nil || a.died() != nil {
			return
		}
		id := fmt.Sprintf("list-%d", n)
		prefix := listPrefix + strings.Repeat("sub/", len(sizes)-1-i)
		if n < have {
			cells[id] = report.Failed(fmt.Errorf("list sizes must ascend"))
			continue
		}
		start := time.Now()
		r.logf(dialect, system, "populating %s with %d more keys (%d concurrent creates)", prefix, n-have, populateWorkers)
		if err := workload.Populate(ctx, a.t, prefix+"item-", 0, n-have, populateWorkers); err != nil {
			for _, m := range sizes[i:] {
				cells[fmt.Sprintf("list-%d", m)] = report.Failed(err)
			}
			r.logf(dialect, system, "populate: %v", err)
			return
		}
		took := time.Since(start)
		r.rep.Note("%s/%s: creating the %s keys for the %s-key list took %v (%s with %d writers)", dialect, system,
			count(n-have), count(n), took.Round(100*time.Millisecond), report.FormatRate(float64(n-have)/took.Seconds()), populateWorkers)
		have = n
		res, err := workload.ListLatency(ctx, a.t, prefix, n, r.o.Duration, 3)
		if err != nil {
			cells[id] = report.Failed(err)
			r.logf(dialect, system, "list %d: %v", n, err)
			continue
		}
		p50 := report.Ms(res.Latency.P50)
		cells[id] = report.Cell{OK: true, Value: p50, Text: fmt.Sprintf("%s (p99 %s, %d runs)", report.FormatMs(p50), report.FormatMs(report.Ms(res.Latency.P99)), res.Latency.N)}
		r.logf(dialect, system, "list %d keys: p50 %s, p99 %s over %d runs", n, report.FormatMs(p50), report.FormatMs(report.Ms(res.Latency.P99)), res.Latency.N)
	}
}

func (r *runner) writeCell(dialect, system, what string, res workload.WriteResult) report.Cell {
	text := fmt.Sprintf("%s (p99 %s)", report.FormatRate(res.PerSecond()), report.FormatMs(report.Ms(res.Latency.P99)))
	if res.Ops == 0 {
		text = fmt.Sprintf("no write succeeded: %v", res.FirstErr)
		if len(text) > 120 {
			text = text[:117] + "..."
		}
		text = strings.ReplaceAll(text, "|", "/")
	}
	if res.Errors > 0 {
		text += fmt.Sprintf(", %d errors", res.Errors)
		r.rep.Note("%s/%s %s: %d of %d writes failed; first error: %v", dialect, system, what, res.Errors, res.Errors+res.Ops, res.FirstErr)
	}
	r.logf(dialect, system, "%s: %s", what, text)
	return report.Cell{OK: res.Ops > 0, Value: res.PerSecond(), Text: text}
}

// database prepares an empty database for system on dialect and returns
// the endpoint to open it with.
func (r *runner) database(ctx context.Context, dialect, system string) (string, func(), error) {
	if dialect == "sqlite" {
		dir := filepath.Join(r.o.WorkDir, "sqlite-"+system)
		if err := os.RemoveAll(dir); err != nil {
			return "", nil, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", nil, err
		}
		path := filepath.Join(dir, "state.db")
		ep := path
		if system == "kine" {
			ep = kineproc.SQLiteEndpoint(path)
		}
		return ep, func() { os.RemoveAll(dir) }, nil
	}
	db, err := pgtemp.Create(ctx, r.o.PostgresDSN, r.o.DBPrefix+"_"+system)
	if err != nil {
		return "", nil, err
	}
	return db.DSN, func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := db.Drop(dctx); err != nil {
			r.logf(dialect, system, "%v", err)
		}
	}, nil
}

// open starts one instance of system on endpoint.
func (r *runner) open(ctx context.Context, dialect, system, endpoint, name string) (*instance, error) {
	if system == "skiff" {
		s, err := target.OpenSkiff(ctx, endpoint)
		if err != nil {
			return nil, err
		}
		return &instance{t: s, close: func() { s.Close() }, died: func() error { return nil }}, nil
	}
	logPath := filepath.Join(r.o.WorkDir, fmt.Sprintf("kine-%s-%s.log", dialect, name))
	p, err := kineproc.Start(ctx, r.kineBin, endpoint, logPath)
	if err != nil {
		return nil, err
	}
	c, err := target.DialEtcd(ctx, p.Endpoint)
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("%w; kine log tail:\n%s", err, p.LogTail(2000))
	}
	return &instance{
		t:     c,
		close: func() { c.Close(); p.Stop() },
		died: func() error {
			if exited, err := p.Exited(); exited {
				if err == nil {
					err = errors.New("exit status 0")
				}
				return fmt.Errorf("%v; log tail:\n%s", err, p.LogTail(1000))
			}
			return nil
		},
	}, nil
}

func header(o Options, pgVersion string) []string {
	h := []string{
		fmt.Sprintf("storebench, %s", time.Now().UTC().Format("2006-01-02 15:04 MST")),
		fmt.Sprintf("machine: %d CPUs%s, %s/%s, %s", runtime.NumCPU(), cpuModel(), runtime.GOOS, runtime.GOARCH, runtime.Version()),
		fmt.Sprintf("kine %s as a child process on loopback, driven with go.etcd.io/etcd/client/v3 %s; skiff's store in-process (storage.New)", kineproc.Version, depVersion("go.etcd.io/etcd/client/v3")),
	}
	if pgVersion != "" {
		h = append(h, "postgres: "+pgVersion+", one throw-away database per system")
	}
	h = append(h, fmt.Sprintf("each write/list measurement runs %v; values are %d-byte JSON; watch: %.0f writes/s for %v, timed from issuing the write to the event's arrival",
		o.Duration, workload.ValueSize, o.WatchRate, o.WatchDuration))
	h = append(h, "\"skiff vs kine\" = how many times better skiff is (writes: skiff/kine; latencies: kine/skiff)")
	return h
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return " (" + strings.TrimSpace(v) + ")"
		}
	}
	return ""
}

func depVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "(unknown version)"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// count prints 10000 as "10,000".
func count(n int) string {
	return strings.TrimSuffix(report.FormatRate(float64(n)), "/s")
}
