package logs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

const sample = `2026-11-30T05:00:01.000000000Z stdout F one
2026-11-30T05:00:02.000000000Z stderr F two
2026-11-30T05:00:03.000000000Z stdout P thr
2026-11-30T05:00:03.100000000Z stdout F ee
not a CRI record
2026-11-30T05:00:04.000000000Z stdout F four
`

func write(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadOptions(t *testing.T) {
	path := write(t, sample)
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"everything", Options{TailLines: -1}, "one\ntwo\nthree\nnot a CRI record\nfour\n"},
		{"tail 2", Options{TailLines: 2}, "not a CRI record\nfour\n"},
		{"tail 0", Options{TailLines: 0}, ""},
		{"tail more than there is", Options{TailLines: 100}, "one\ntwo\nthree\nnot a CRI record\nfour\n"},
		{"since", Options{TailLines: -1, SinceTime: time.Date(2026, 11, 30, 5, 0, 2, 0, time.UTC)}, "two\nthree\nnot a CRI record\nfour\n"},
		{"timestamps", Options{TailLines: 1, Timestamps: true}, "2026-11-30T05:00:04Z four\n"},
		{"limit bytes", Options{TailLines: -1, LimitBytes: 6}, "one\ntw"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := Read(context.Background(), path, tc.opts, &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("got %q, want %q", out.String(), tc.want)
			}
		})
	}
	if err := Read(context.Background(), filepath.Join(t.TempDir(), "missing.log"), Options{TailLines: -1}, &bytes.Buffer{}); err == nil {
		t.Error("missing file: no error")
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	return s.buf.String()
}

func TestReadFollowsUntilTheContainerStops(t *testing.T) {
	path := write(t, "2026-11-30T05:00:01Z stdout F first\n")
	var running atomic.Bool
	running.Store(true)
	out := &syncBuffer{mu: make(chan struct{}, 1)}
	done := make(chan error, 1)
	go func() {
		done <- Read(context.Background(), path, Options{TailLines: -1, Follow: true, Running: running.Load, PollInterval: 10 * time.Millisecond}, out)
	}()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	deadline := time.Now().Add(time.Minute)
	for out.String() != "first\n" {
		if time.Now().After(deadline) {
			t.Fatalf("first line never read: %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.WriteString("2026-11-30T05:00:02Z stdout F sec")
	f.WriteString("ond\n")
	running.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("follow did not end after the container stopped")
	}
	if out.String() != "first\nsecond\n" {
		t.Errorf("followed %q", out.String())
	}
}
