// Command storebench measures skiff's store against kine v0.17.5 (the SQL
// shim k3s uses for etcd) in one run on one machine, on SQLite and on
// PostgreSQL, and prints a Markdown table with both figures, the ratio and
// the project's targets:
//
//	cd bench && go run ./cmd/storebench
//
// Progress goes to stderr, the table to stdout (and to -o if given).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/skiffkube/skiff/bench/kineproc"
	"github.com/skiffkube/skiff/bench/suite"
)

const defaultDSN = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "storebench:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("storebench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := os.Getenv("SKIFF_TEST_POSTGRES_DSN")
	if dsn == "" {
		dsn = defaultDSN
	}
	var (
		pg        = fs.String("postgres", dsn, "PostgreSQL URL of a database the user may connect to and CREATE DATABASE from; throw-away databases storebench_<pid>_skiff/_kine are created and dropped (\"\" skips PostgreSQL; default from $SKIFF_TEST_POSTGRES_DSN)")
		sqlite    = fs.Bool("sqlite", true, "measure on SQLite")
		duration  = fs.Duration("duration", 5*time.Second, "length of each write and list measurement")
		writers   = fs.String("writers", "1,16,64", "concurrent writer counts for the create runs")
		cas       = fs.Int("cas-writers", 16, "writers for the compare-and-swap update run (0 skips it)")
		lists     = fs.String("list-sizes", "10000,100000", "keys under one prefix for the SQLite list runs, ascending")
		pgLists   = fs.String("postgres-list-sizes", "10000,100000", "keys under one prefix for the PostgreSQL list runs, ascending")
		listCache = fs.Bool("list-cache", true, "let skiff serve lists from its in-memory list cache (false: every list reads the database)")
		watchRate = fs.Float64("watch-rate", 20, "writes per second during the watch latency run (0 skips it)")
		watchDur  = fs.Duration("watch-duration", 0, "length of the watch latency run (default 4 × -duration, so that p99 rests on a few hundred events)")
		kine      = fs.String("kine", "", "path to a kine binary (default: go install github.com/k3s-io/kine@v0.17.5 into -kine-cache once)")
		kineCache = fs.String("kine-cache", "", "where a built kine is kept (default ~/.cache/skiff-bench/kine-v0.17.5)")
		workDir   = fs.String("workdir", "", "directory for SQLite files and kine logs (default: a fresh temporary directory, removed afterwards)")
		out       = fs.String("o", "", "also write the table to this file")
		profDir   = fs.String("cpuprofile-dir", "", "write a CPU profile of every skiff step into this directory")
		buildKine = fs.Bool("build-kine", false, "only build kine into -kine-cache (if it is not there yet) and print its path")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *buildKine {
		return ensureKine(*kineCache, stdout, stderr)
	}
	ws, err := ints("-writers", *writers)
	if err != nil {
		return err
	}
	ls, err := ints("-list-sizes", *lists)
	if err != nil {
		return err
	}
	pls, err := ints("-postgres-list-sizes", *pgLists)
	if err != nil {
		return err
	}
	if *duration <= 0 {
		return errors.New("-duration must be positive")
	}
	if *watchDur == 0 {
		*watchDur = 4 * *duration
	}
	if *watchRate < 0 || *watchRate > 1000 {
		return fmt.Errorf("-watch-rate must be between 0 and 1000, got %v", *watchRate)
	}

	if *profDir != "" {
		if err := os.MkdirAll(*profDir, 0o755); err != nil {
			return err
		}
	}
	dir := *workDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "storebench-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := suite.Run(ctx, suite.Options{
		SQLite:            *sqlite,
		PostgresDSN:       *pg,
		DBPrefix:          fmt.Sprintf("storebench_%d", os.Getpid()),
		Duration:          *duration,
		Writers:           ws,
		CASWriters:        *cas,
		ListSizes:         ls,
		PostgresListSizes: pls,
		NoListCache:       !*listCache,
		WatchRate:         *watchRate,
		WatchDuration:     *watchDur,
		KineBin:           *kine,
		KineCacheDir:      *kineCache,
		WorkDir:           dir,
		ProfileDir:        *profDir,
		Log:               stderr,
	})
	if rep != nil {
		if werr := rep.WriteMarkdown(stdout); werr != nil {
			return werr
		}
		if *out != "" {
			f, ferr := os.Create(*out)
			if ferr != nil {
				return ferr
			}
			if werr := rep.WriteMarkdown(f); werr != nil {
				f.Close()
				return werr
			}
			if cerr := f.Close(); cerr != nil {
				return cerr
			}
		}
	}
	return err
}

// ints parses "1,16,64"; an empty string is an empty list.
func ints(flagName, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s: %q is not a positive integer", flagName, f)
		}
		if len(out) > 0 && n <= out[len(out)-1] && flagName != "-writers" {
			return nil, fmt.Errorf("%s: sizes must ascend, got %q", flagName, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// ensureKine builds kine into cacheDir (the default cache when empty) unless
// it is there, and prints the binary's path. The test script runs it once
// before the packages that need kine start side by side, each of which
// would otherwise build it on a fresh machine (minutes each).
func ensureKine(cacheDir string, stdout, stderr io.Writer) error {
	dir, err := kineproc.CacheDir(cacheDir)
	if err != nil {
		return err
	}
	bin, err := kineproc.Ensure(context.Background(), dir, stderr)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, bin)
	return err
}
