// Command apibench measures skiff's API server as clients see it: an
// in-process server on a fresh SQLite store, driven over HTTPS on loopback
// by client-go with its defaults (protobuf). Run it from the repository:
//
//	go run ./cmd/apibench
//
// It prints a Markdown table of
//   - create, get and update latency (p50, p99) and throughput with 32
//     concurrent clients, each working on its own pods;
//   - the latency of listing 10,000 pods as JSON (kubectl -o json), as a
//     Table (kubectl get) and as protobuf (client-go);
//   - fan-out: 1,000 concurrent watchers, one write, the time from issuing
//     the write to each watcher receiving its event.
//
// It lives in the main module, not in bench/: bench/ holds comparisons with
// a peer (kine) whose dependencies must stay out of skiff's go.mod, while
// this command needs nothing but skiff and client-go, and being built and
// vetted with the rest of the module keeps it compiling as the API server
// changes. Progress goes to stderr, the table to stdout (and -o).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "apibench:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("apibench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.clients, "clients", 32, "concurrent clients for the create, get and update runs")
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "length of each of the create, get and update runs")
	fs.IntVar(&o.listSize, "list-size", 10000, "pods in the listed namespace")
	fs.IntVar(&o.listRuns, "list-runs", 10, "lists per encoding")
	fs.IntVar(&o.watchers, "watchers", 1000, "concurrent watchers for the fan-out run")
	fs.IntVar(&o.crudWatchers, "crud-watchers", 0, "watches of the pods open during the create, get and update runs (a cluster's scheduler and kubelets)")
	fs.IntVar(&o.writes, "fanout-writes", 5, "writes in the fan-out run, one at a time, each seen by every watcher")
	fs.StringVar(&o.workDir, "workdir", "", "directory for the SQLite file and certificates (default: a fresh temporary directory, removed afterwards)")
	out := fs.String("o", "", "also write the table to this file")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (server and clients share the process) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if err := o.validate(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.progress = stderr
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	rep, err := measure(ctx, o)
	if err != nil {
		return err
	}
	table := rep.markdown()
	if _, err := io.WriteString(stdout, table); err != nil {
		return err
	}
	if *out != "" {
		if err := os.WriteFile(*out, []byte(table), 0o644); err != nil {
			return err
		}
	}
	return nil
}
