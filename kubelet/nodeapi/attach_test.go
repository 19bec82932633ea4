package nodeapi

import (
	"bytes"
	"context"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/skiffkube/skiff/kubelet/logs"
)

// growingLog is one running container whose log the test appends to.
type growingLog struct {
	dirFinder
	path    string
	running atomic.Bool
}

func (g *growingLog) ContainerLog(context.Context, string, string, string, bool) (logs.File, error) {
	return logs.File{Path: g.path, Running: g.running.Load}, nil
}

// syncBuffer is a bytes.Buffer safe for the stream's writer and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Attach streams what the container writes from now on, stdout and stderr
// apart, and ends when the container does, for a container whose stdio the
// node does not hold; stdin is refused for it.
func TestAttachFollowsNewOutput(t *testing.T) {
	dir := t.TempDir()
	g := &growingLog{dirFinder: dirFinder(dir), path: filepath.Join(dir, "app.log")}
	os.WriteFile(g.path, []byte("2026-11-30T05:00:01Z stdout F before attach\n"), 0o644)
	g.running.Store(true)
	srv := httptest.NewServer(NewHandler(g))
	defer srv.Close()

	attach := func(stdin bool, stdout, stderr *syncBuffer) error {
		q := url.Values{"output": {"1"}, "error": {"1"}}
		opts := remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr}
		if stdin {
			q.Set("input", "1")
			opts.Stdin = strings.NewReader("x")
		}
		u, _ := url.Parse(srv.URL + "/attach/default/web/app?" + q.Encode())
		ex, err := remotecommand.NewSPDYExecutor(&rest.Config{Host: srv.URL}, "POST", u)
		if err != nil {
			t.Fatal(err)
		}
		return ex.StreamWithContext(context.Background(), opts)
	}
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() { done <- attach(false, &out, &errOut) }()
	time.Sleep(300 * time.Millisecond) // attached
	f, _ := os.OpenFile(g.path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("2026-11-30T05:00:02Z stdout F after attach\n2026-11-30T05:00:03Z stderr F an error\n")
	f.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "after attach") || !strings.Contains(errOut.String(), "an error") {
		if time.Now().After(deadline) {
			t.Fatalf("attached output %q / %q", out.String(), errOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	g.running.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("attach ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("attach did not end with the container")
	}
	if strings.Contains(out.String(), "before attach") || strings.Contains(out.String(), "an error") {
		t.Errorf("stdout %q has old or stderr lines", out.String())
	}
	g.running.Store(true)
	if err := attach(true, &syncBuffer{}, &syncBuffer{}); err == nil || !strings.Contains(err.Error(), "has no stdin") {
		t.Errorf("attach with stdin: %v", err)
	}
}
