package suite

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffkube/skiff/bench/kineproc"
	"github.com/skiffkube/skiff/bench/report"
)

// kineBinary returns the kine binary for tests: $SKIFF_BENCH_KINE if set,
// else the cached build, building it (minutes, once) when missing.
func kineBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SKIFF_BENCH_KINE"); p != "" {
		return p
	}
	dir, err := kineproc.DefaultCacheDir()
	if err != nil {
		dir = filepath.Join("..", ".cache", "kine-"+kineproc.Version)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var log bytes.Buffer
	bin, err := kineproc.Ensure(ctx, dir, &log)
	if err != nil {
		t.Fatalf("build kine: %v\n%s", err, log.String())
	}
	return bin
}

// TestSmoke runs the whole benchmark with tiny counts against skiff and kine
// on SQLite (and on PostgreSQL when SKIFF_TEST_POSTGRES_DSN is set, as in
// CI), and checks that every cell was measured: the harness, kine's start-up,
// the etcd transactions and skiff's store all work together.
func TestSmoke(t *testing.T) {
	dsn := os.Getenv("SKIFF_TEST_POSTGRES_DSN")
	if dsn == "" && os.Getenv("CI") == "true" {
		t.Fatal("CI=true but SKIFF_TEST_POSTGRES_DSN is not set")
	}
	// Built (minutes, on a machine without the cached binary) before the
	// run's deadline starts: inside Run's arguments the build ate the five
	// minutes and PostgreSQL's dial failed on the expired context.
	kine := kineBinary(t)
	var progress bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{
		SQLite:            true,
		PostgresDSN:       dsn,
		DBPrefix:          fmt.Sprintf("storebench_test_%d", os.Getpid()),
		Duration:          200 * time.Millisecond,
		Writers:           []int{1, 4},
		CASWriters:        2,
		ListSizes:         []int{20, 100},
		PostgresListSizes: []int{20},
		WatchRate:         20,
		WatchDuration:     time.Second,
		KineBin:           kine,
		WorkDir:           t.TempDir(),
		Log:               &progress,
	})
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}
	var table bytes.Buffer
	if err := rep.WriteMarkdown(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())

	want := 2 + 1 + 2 + 2 // create runs, CAS, lists, watch p50/p99
	if dsn != "" {
		want += 2 + 1 + 1 + 2
	}
	if len(rep.Rows) != want {
		t.Fatalf("got %d rows, want %d", len(rep.Rows), want)
	}
	for _, r := range rep.Rows {
		for name, c := range map[string]report.Cell{"skiff": r.Skiff, "kine": r.Kine} {
			if !c.OK || c.Value <= 0 {
				t.Errorf("%s %q: %s not measured: %s", r.Dialect, r.Metric, name, c.Text)
			}
		}
		// skiff must be clean; kine's known failures are reported, not judged.
		if strings.Contains(r.Skiff.Text, "error") || strings.Contains(r.Skiff.Text, "missing") {
			t.Errorf("%s %q: skiff had failures: %s", r.Dialect, r.Metric, r.Skiff.Text)
		}
		if _, ok := r.Ratio(); !ok {
			t.Errorf("%s %q: no ratio", r.Dialect, r.Metric)
		}
	}
	if t.Failed() {
		t.Logf("progress:\n%s", progress.String())
	}
}
