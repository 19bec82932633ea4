package kineproc

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func kineBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SKIFF_BENCH_KINE"); p != "" {
		return p
	}
	dir, err := DefaultCacheDir()
	if err != nil {
		dir = filepath.Join("..", ".cache", "kine-"+Version)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var log bytes.Buffer
	bin, err := Ensure(ctx, dir, &log)
	if err != nil {
		t.Fatalf("build kine: %v\n%s", err, log.String())
	}
	return bin
}

func TestStartServesAndStops(t *testing.T) {
	bin := kineBinary(t)
	dir := t.TempDir()
	p, err := Start(context.Background(), bin, SQLiteEndpoint(filepath.Join(dir, "state.db")), filepath.Join(dir, "kine.log"))
	if err != nil {
		t.Fatal(err)
	}
	host, _, err := net.SplitHostPort(strings.TrimPrefix(p.Endpoint, "http://"))
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("endpoint %q is not on loopback (%v)", p.Endpoint, err)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.Endpoint, "http://"))
	if err != nil {
		t.Fatalf("kine not listening: %v", err)
	}
	conn.Close()
	if exited, _ := p.Exited(); exited {
		t.Fatal("kine exited while serving")
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if exited, err := p.Exited(); !exited || err != nil {
		t.Fatalf("after Stop: Exited() = %v, %v; want true, nil", exited, err)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestStartReportsKineFailure(t *testing.T) {
	bin := kineBinary(t)
	dir := t.TempDir()
	_, err := Start(context.Background(), bin, "nosuchdriver://x", filepath.Join(dir, "kine.log"))
	if err == nil || !strings.Contains(err.Error(), "exited during start-up") {
		t.Fatalf("Start with a bad endpoint: err = %v, want an early-exit error", err)
	}
}

func TestEnsureUsesCachedBinary(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "kine")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := Ensure(context.Background(), dir, nil)
	if err != nil || got != fake {
		t.Fatalf("Ensure = %q, %v; want the cached %q without building", got, err, fake)
	}
}
