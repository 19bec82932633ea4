package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunSmall runs every measurement with tiny counts: the command works
// end to end (server, clients, lists in three encodings, fan-out) and
// prints every row. It asserts no figure: performance is what the command
// reports, not what a unit test on a shared machine can judge.
func TestRunSmall(t *testing.T) {
	out := filepath.Join(t.TempDir(), "table.md")
	var stdout, stderr bytes.Buffer
	err := run([]string{"-clients", "3", "-duration", "300ms", "-list-size", "40", "-list-runs", "2",
		"-watchers", "250", "-fanout-writes", "2", "-workdir", t.TempDir(), "-o", out}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{
		"| create pod, 3 concurrent clients |", "| get pod, 3 concurrent clients |", "| update pod, 3 concurrent clients |",
		"| list 40 pods as JSON", "| list 40 pods as Table", "| list 40 pods as protobuf",
		"| fan-out: one write → 250 watchers", "500 deliveries (2 writes)",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, stdout.String())
		}
	}
	file, err := os.ReadFile(out)
	if err != nil || string(file) != stdout.String() {
		t.Errorf("-o file differs from stdout (%v)", err)
	}
}

func TestFlagsRejected(t *testing.T) {
	for _, args := range [][]string{{"-clients", "0"}, {"-duration", "0s"}, {"-watchers", "0"}, {"-list-size", "-1"}, {"extra"}} {
		var stdout, stderr bytes.Buffer
		if err := run(args, &stdout, &stderr); err == nil {
			t.Errorf("run(%v) succeeded, want an error", args)
		}
	}
}
