//go:build linux

package containerd

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// lockedBuffer collects an attach session's output for the test to poll.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func waitOutput(t *testing.T, what string, b *lockedBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !strings.Contains(b.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never contained %q; it has:\n%s", what, want, b.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// session is one attach running in the background.
type session struct {
	out, errOut lockedBuffer
	stdin       *io.PipeWriter
	cancel      context.CancelFunc
	done        chan error
}

func attach(t *testing.T, r *Runtime, id string, withStdin bool, resize <-chan krt.TerminalSize) *session {
	t.Helper()
	s := &session{done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	t.Cleanup(cancel)
	opts := krt.AttachOptions{Stdout: &s.out, Stderr: &s.errOut, Resize: resize}
	if withStdin {
		pr, pw := io.Pipe()
		s.stdin, opts.Stdin = pw, pr
	}
	go func() { s.done <- r.Attach(ctx, id, opts) }()
	return s
}

func (s *session) wait(t *testing.T) {
	t.Helper()
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("attach: %v", err)
		}
	case <-time.After(waitLong):
		t.Fatal("attach did not return")
	}
}

// A container with stdin (StdinOnce) reads what an attach session sends,
// its output reaches the session and the CRI log, and the session's end
// closes its stdin for good.
func TestAttachStdinOnceEchoesAndLogs(t *testing.T) {
	r := newTestRuntime(t)
	p := newPod(t, r)
	cfg := p.config("chat", "chat", "30")
	cfg.Stdin, cfg.StdinOnce = true, true
	id := p.run(cfg)
	waitLog(t, cfg.LogPath, "stdout F tty=false")

	s := attach(t, r, id, true, nil)
	if _, err := io.WriteString(s.stdin, "hello\n"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, "attach output", &s.out, "got hello size=none\n")
	s.stdin.Close() // the client's input ends: StdinOnce closes the container's
	waitOutput(t, "attach output", &s.out, "stdin closed\n")
	s.cancel()
	s.wait(t)
	log := waitLog(t, cfg.LogPath, "stdout F stdin closed")
	if !strings.Contains(log, "stdout F got hello size=none") {
		t.Errorf("log lacks the answer:\n%s", log)
	}

	// Stdin is gone; output-only attach still works.
	err := r.Attach(context.Background(), id, krt.AttachOptions{Stdin: strings.NewReader("again\n"), Stdout: io.Discard})
	if !errors.Is(err, krt.ErrStdinClosed) {
		t.Errorf("second attach with stdin: %v, want ErrStdinClosed", err)
	}
	if err := r.StopContainer(context.Background(), id, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := r.Attach(context.Background(), id, krt.AttachOptions{Stdout: io.Discard}); !errors.Is(err, krt.ErrNoStdio) {
		t.Errorf("attach after exit: %v, want ErrNoStdio", err)
	}
}

// With TTY the container's stdin is a terminal that takes the client's
// size; a session whose input ends detaches and leaves stdin open for the
// next one (no StdinOnce).
func TestAttachTTYResizesAndDetaches(t *testing.T) {
	r := newTestRuntime(t)
	p := newPod(t, r)
	cfg := p.config("tty", "chat")
	cfg.Stdin, cfg.TTY = true, true
	id := p.run(cfg)
	waitLog(t, cfg.LogPath, "stdout F tty=true")

	sizes := make(chan krt.TerminalSize, 1)
	defer close(sizes)
	sizes <- krt.TerminalSize{Width: 100, Height: 30}
	s := attach(t, r, id, true, sizes)
	deadline := time.Now().Add(waitLong)
	for !strings.Contains(s.out.String(), "got hi size=100x30") {
		if time.Now().After(deadline) {
			t.Fatalf("no answer with the new size; output:\n%s", s.out.String())
		}
		if _, err := io.WriteString(s.stdin, "hi\n"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if s.errOut.String() != "" {
		t.Errorf("a TTY session got stderr %q", s.errOut.String())
	}
	s.stdin.Close()
	s.wait(t) // detached

	s2 := attach(t, r, id, true, nil)
	io.WriteString(s2.stdin, "again\n")
	waitOutput(t, "second attach output", &s2.out, "got again size=100x30")
	s2.cancel()
	s2.wait(t)
	waitLog(t, cfg.LogPath, "stdout F got again size=100x30")
	if st := waitState(t, r, id, krt.StateRunning); st.State != krt.StateRunning {
		t.Fatalf("container is %s", st.State)
	}
}

// A restarted agent opens the FIFOs of a running container again: its
// output reaches its log and attach sessions, and its stdin (held open by
// the shim meanwhile) takes the next session's input.
func TestRestartedAgentKeepsStdinContainers(t *testing.T) {
	r := newTestRuntime(t)
	p := newPod(t, r)
	cfg := p.config("chat", "chat")
	cfg.Stdin = true
	id := p.run(cfg)
	s := attach(t, r, id, true, nil)
	io.WriteString(s.stdin, "one\n")
	waitLog(t, cfg.LogPath, "stdout F got one size=none")
	s.stdin.Close()
	s.wait(t)
	r.Close() // the agent stops; the container keeps running

	r2, err := New(context.Background(), testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	p.r = r2
	s2 := attach(t, r2, id, true, nil)
	io.WriteString(s2.stdin, "two\n")
	waitOutput(t, "attach output after restart", &s2.out, "got two size=none")
	s2.stdin.Close()
	s2.wait(t)
	waitLog(t, cfg.LogPath, "stdout F got two size=none")
	if st := waitState(t, r2, id, krt.StateRunning); st.State != krt.StateRunning {
		t.Fatalf("container is %s", st.State)
	}
	p.remove() // while r2 is open
	p.ids = nil
}
