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
	"runtime/pprof"
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
	// NoListCache turns off skiff's in-memory list cache: lists read the
	// database every time.
	NoListCache bool
	// KineBin is a kine binary; empty builds kine into KineCacheDir.
	KineBin      string
	KineCacheDir string
	// WorkDir holds SQLite files and kine logs.
	WorkDir string
	// ProfileDir, if set, receives a CPU profile of this process for every
	// skiff step (skiff-<dialect>-<step>.pprof), to see where skiff's time
	// goes; kine runs in its own process and is not profiled.
	ProfileDir string
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
		dir, err := kineproc.CacheDir(o.KineCacheDir)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Log, "kine: using or building %s@%s in %s (a cold build takes minutes)\n", kineproc.Module, kineproc.Version, dir)
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
	rep.Note("load average at the end: %s (1, 5, 15 min; other processes share the machine)", loadAverage())
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

// system is one store under test on one dialect, with its cells.
type system struct {
	name     string
	endpoint string
	a        *instance
	cells    map[string]report.Cell
	// broken is set once the system cannot continue (kine exited).
	broken error
}

// dialect measures both systems on one dialect. Every step runs on skiff and
// then at once on kine, so that a change in the machine's load during the
// run (other processes share its two cores) affects both sides alike.
func (r *runner) dialect(ctx context.Context, dialect string, listSizes []int) {
	specs := r.specs(dialect, listSizes)
	var systems []*system
	for _, name := range []string{"skiff", "kine"} {
		sys := &system{name: name, cells: map[string]report.Cell{}}
		systems = append(systems, sys)
		endpoint, cleanup, err := r.database(ctx, dialect, name)
		if err != nil {
			r.failAll(dialect, sys, specs, err)
			continue
		}
		defer cleanup()
		sys.endpoint = endpoint
		a, err := r.open(ctx, dialect, name, endpoint, "a")
		if err != nil {
			r.failAll(dialect, sys, specs, err)
			continue
		}
		defer a.close()
		sys.a = a
	}
	each := func(stepName string, step func(sys *system)) {
		for _, sys := range systems {
			if sys.a == nil || sys.broken != nil || ctx.Err() != nil {
				continue
			}
			if err := sys.a.died(); err != nil {
				sys.broken = err
				r.rep.Note("%s/%s: kine exited during the run: %v", dialect, sys.name, err)
				continue
			}
			if sys.name == "skiff" && r.o.ProfileDir != "" && stepName != "" {
				stop := r.profile(dialect, stepName)
				step(sys)
				stop()
				continue
			}
			step(sys)
		}
	}

	for _, n := range r.o.Writers {
		each(fmt.Sprintf("create-%d", n), func(sys *system) {
			res := workload.Creates(ctx, sys.a.t, fmt.Sprintf("%sc%d/", writePrefix, n), n, r.o.Duration)
			sys.cells[fmt.Sprintf("create-%d", n)] = r.writeCell(dialect, sys.name, fmt.Sprintf("create, %d writer%s", n, plural(n)), res)
		})
	}
	if n := r.o.CASWriters; n > 0 {
		each("cas", func(sys *system) {
			res, err := workload.CASUpdates(ctx, sys.a.t, casPrefix, n, r.o.Duration)
			if err != nil {
				sys.cells["cas"] = report.Failed(err)
				r.logf(dialect, sys.name, "CAS: %v", err)
				return
			}
			sys.cells["cas"] = r.writeCell(dialect, sys.name, fmt.Sprintf("CAS update, %d writer%s", n, plural(n)), res)
		})
	}
	have := map[string]int{}
	for i := range listSizes {
		each(fmt.Sprintf("list-%d", listSizes[i]), func(sys *system) {
			have[sys.name] = r.list(ctx, dialect, sys, listSizes, i, have[sys.name])
		})
	}
	if r.o.WatchRate > 0 {
		each("watch", func(sys *system) { r.watch(ctx, dialect, sys) })
	}
	each("", func(*system) {}) // notes a kine that died during the last step

	for _, s := range specs {
		r.rep.Add(report.Row{Dialect: dialect, Metric: s.metric, Better: s.better, Target: s.target,
			Skiff: cellOr(systems[0].cells, s.id), Kine: cellOr(systems[1].cells, s.id)})
	}
}

// profile starts a CPU profile for one skiff step and returns its stop.
func (r *runner) profile(dialect, step string) func() {
	path := filepath.Join(r.o.ProfileDir, fmt.Sprintf("skiff-%s-%s.pprof", dialect, step))
	f, err := os.Create(path)
	if err != nil {
		r.logf(dialect, "skiff", "cpu profile: %v", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		r.logf(dialect, "skiff", "cpu profile: %v", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

func (r *runner) failAll(dialect string, sys *system, specs []spec, err error) {
	r.logf(dialect, sys.name, "cannot run: %v", err)
	r.rep.Note("%s/%s could not run: %v", dialect, sys.name, err)
	for _, s := range specs {
		sys.cells[s.id] = report.Failed(err)
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

// watch measures write-to-event latency: on PostgreSQL from instance a to a
// second instance b on the same database, on SQLite within instance a.
func (r *runner) watch(ctx context.Context, dialect string, sys *system) {
	fail := func(err error) {
		sys.cells["watch-p50"], sys.cells["watch-p99"] = report.Failed(err), report.Failed(err)
		r.logf(dialect, sys.name, "watch: %v", err)
	}
	watcher := sys.a
	if dialect == "postgres" {
		b, err := r.open(ctx, dialect, sys.name, sys.endpoint, "b")
		if err != nil {
			fail(err)
			return
		}
		defer b.close()
		watcher = b
	}
	r.logf(dialect, sys.name, "watch latency: %.0f writes/s for %v", r.o.WatchRate, r.o.WatchDuration)
	res, err := workload.WatchLatency(ctx, sys.a.t, watcher.t, watchPrefix, r.o.WatchRate, r.o.WatchDuration, 10*time.Second)
	if err != nil {
		fail(err)
		return
	}
	suffix := ""
	if res.Missing() > 0 || res.Duplicates > 0 || res.WriteErrors > 0 {
		suffix = fmt.Sprintf(" (%d of %d events missing, %d duplicates, %d write errors)", res.Missing(), res.Sent, res.Duplicates, res.WriteErrors)
		r.rep.Note("%s/%s watch: %d of %d events never arrived within 10 s after the last write, %d duplicates, %d write errors",
			dialect, sys.name, res.Missing(), res.Sent, res.Duplicates, res.WriteErrors)
	}
	p50, p99, max := report.Ms(res.Latency.P50), report.Ms(res.Latency.P99), report.Ms(res.Latency.Max)
	sys.cells["watch-p50"] = report.Cell{OK: res.Received > 0, Value: p50, Text: report.FormatMs(p50) + suffix}
	sys.cells["watch-p99"] = report.Cell{OK: res.Received > 0, Value: p99, Text: fmt.Sprintf("%s (max %s)%s", report.FormatMs(p99), report.FormatMs(max), suffix)}
	r.logf(dialect, sys.name, "watch: %d events, p50 %s, p99 %s, max %s%s", res.Received, report.FormatMs(p50), report.FormatMs(p99), report.FormatMs(max), suffix)
}

// list fills the list prefix in nested steps so that each size's prefix
// holds exactly that many keys and every size reuses the keys of the smaller
// ones: the keys of size i sit under listPrefix + "sub/"×(len(sizes)-1-i).
// have is how many keys earlier steps created; list returns the new count.
func (r *runner) list(ctx context.Context, dialect string, sys *system, sizes []int, i, have int) int {
	n := sizes[i]
	id := fmt.Sprintf("list-%d", n)
	if have < 0 {
		sys.cells[id] = report.Failed(fmt.Errorf("a smaller list could not be populated"))
		return have
	}
	prefix := listPrefix + strings.Repeat("sub/", len(sizes)-1-i)
	start := time.Now()
	r.logf(dialect, sys.name, "populating %s with %d more keys (%d concurrent creates)", prefix, n-have, populateWorkers)
	pop, err := workload.Populate(ctx, sys.a.t, prefix+"item-", 0, n-have, populateWorkers)
	if err != nil {
		sys.cells[id] = report.Failed(err)
		r.logf(dialect, sys.name, "populate: %v", err)
		return -1
	}
	took := time.Since(start)
	r.rep.Note("%s/%s: creating the %s keys for the %s-key list took %v (%s with %d writers)", dialect, sys.name,
		count(n-have), count(n), roundDuration(took), report.FormatRate(float64(n-have)/took.Seconds()), populateWorkers)
	if len(pop.ExistsOnFirstTry) > 0 {
		r.rep.Note("%s/%s: %d creates of never-written keys were answered \"already exists\" (retried)", dialect, sys.name, len(pop.ExistsOnFirstTry))
	}
	shortfall := r.verifyPopulate(ctx, dialect, sys, prefix, n, pop)

	res, err := workload.ListLatency(ctx, sys.a.t, prefix, n-shortfall, r.o.Duration, 3)
	if err != nil {
		sys.cells[id] = report.Failed(err)
		r.logf(dialect, sys.name, "list %d: %v", n, err)
		return n
	}
	p50 := report.Ms(res.Latency.P50)
	text := fmt.Sprintf("%s (p99 %s, %d runs)", report.FormatMs(p50), report.FormatMs(report.Ms(res.Latency.P99)), res.Latency.N)
	if shortfall != 0 {
		text += fmt.Sprintf("; returns %s of %s keys, see notes", count(res.Keys), count(n))
	}
	sys.cells[id] = report.Cell{OK: true, Value: p50, Text: text}
	r.logf(dialect, sys.name, "list %d keys: p50 %s, p99 %s over %d runs", n, report.FormatMs(p50), report.FormatMs(report.Ms(res.Latency.P99)), res.Latency.N)
	return n
}

// verifyPopulate lists the keys under prefix (untimed) and explains any
// difference from the n expected: which of this step's keys are missing, and
// whether the store had acknowledged creating them. It returns how many keys
// fewer than n the prefix holds.
func (r *runner) verifyPopulate(ctx context.Context, dialect string, sys *system, prefix string, n int, pop workload.PopulateResult) int {
	keys, err := sys.a.t.ListKeys(ctx, prefix)
	if err != nil {
		r.logf(dialect, sys.name, "list keys to verify: %v", err)
		return 0
	}
	if len(keys) == n {
		return 0
	}
	present := make(map[string]bool, len(keys))
	for _, k := range keys {
		present[k] = true
	}
	onRetry := map[string]bool{}
	for _, k := range pop.ExistsOnRetry {
		onRetry[k] = true
	}
	var missing, acked, retried []string
	for _, k := range pop.Keys {
		if present[k] {
			continue
		}
		missing = append(missing, k)
		if onRetry[k] {
			retried = append(retried, k)
		} else {
			acked = append(acked, k)
		}
	}
	example := ""
	if len(missing) > 0 {
		example = " (e.g. " + missing[0] + ")"
	}
	r.rep.Note("%s/%s: after %s creates the prefix holds %s keys, not %s: %d keys are absent%s; %d of them the store had acknowledged as created, %d were taken as written because a retry after a failed create said \"already exists\"",
		dialect, sys.name, count(len(pop.Keys)), count(len(keys)), count(n), len(missing), example, len(acked), len(retried))
	r.logf(dialect, sys.name, "verify: %d of %d keys absent (%d acknowledged)", len(missing), len(pop.Keys), len(acked))
	return n - len(keys)
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
	if lost := res.Lost(); lost > 0 {
		text += fmt.Sprintf(", %d acknowledged writes missing afterwards", lost)
		r.rep.Note("%s/%s %s: %d of %d acknowledged creates are not there when the keys are listed afterwards", dialect, system, what, lost, res.Ops)
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
		s, err := target.OpenSkiff(ctx, endpoint, !r.o.NoListCache)
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
		fmt.Sprintf("machine: %d CPUs%s, %s/%s, %s; load average at start %s", runtime.NumCPU(), cpuModel(), runtime.GOOS, runtime.GOARCH, runtime.Version(), loadAverage()),
		fmt.Sprintf("kine %s as a child process on loopback, driven with go.etcd.io/etcd/client/v3 %s; skiff's store in-process (storage.New)", kineproc.Version, depVersion("go.etcd.io/etcd/client/v3")),
	}
	if pgVersion != "" {
		h = append(h, "postgres: "+pgVersion+", one throw-away database per system")
	}
	h = append(h, fmt.Sprintf("each write/list measurement runs %v; values are %d-byte JSON; watch: %.0f writes/s for %v, timed from issuing the write to the event's arrival",
		o.Duration, workload.ValueSize, o.WatchRate, o.WatchDuration))
	if o.NoListCache {
		h = append(h, "skiff's list cache is off (-list-cache=false): every list reads the database")
	} else {
		h = append(h, "skiff serves lists at the newest revision from its list cache, after reading the database's revision (storage/listcache.go); -list-cache=false measures database reads")
	}
	h = append(h, "\"skiff vs kine\" = how many times better skiff is (writes: skiff/kine; latencies: kine/skiff)")
	return h
}

// loadAverage is the 1, 5 and 15 minute load averages, or "unknown": the
// machine may be shared, and a loaded one lowers every figure.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
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

func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
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
