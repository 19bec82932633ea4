//go:build linux

package containerd

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"

	"github.com/skiffkube/skiff/kubelet/logdriver"
	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// A container created with Stdin does not use the log driver: the shim
// connects stdin only for FIFO IO. Its task gets a FIFO set in
// <IODir>/<container id>/ instead; the agent writes the output it reads
// from the FIFOs to the container's log (the log driver's CRI format, so
// logs and --previous read it the same way), passes it on to attach
// sessions, and holds the stdin FIFO's write end for them.

// drainWait bounds how long a finished container's output may take to be
// copied once its task is deleted (the shim has closed the FIFOs by then).
const drainWait = 10 * time.Second

// stdio is the agent's end of one container's FIFOs.
type stdio struct {
	tty, once bool
	dio       *cio.DirectIO
	// done is closed when stdout and stderr have ended.
	done chan struct{}

	mu         sync.Mutex
	stdin      io.WriteCloser // nil once closed
	stdinTaken bool           // StdinOnce: an attach session has had it

	// subs are the sessions attached; apart from mu, so that a slow
	// client holds up the output but never the closing of stdin.
	subsMu sync.Mutex
	subs   map[*attachSub]struct{}
}

// attachSub is one attach session's output writers.
type attachSub struct {
	stdout, stderr io.Writer
}

// fanout passes what one stream of the container writes on to the
// sessions attached; a session whose writer fails is dropped, never the
// container's log.
type fanout struct {
	s      *stdio
	stderr bool
}

func (f fanout) Write(p []byte) (int, error) {
	f.s.subsMu.Lock()
	defer f.s.subsMu.Unlock()
	for sub := range f.s.subs {
		w := sub.stdout
		if f.stderr {
			w = sub.stderr
		}
		if w == nil {
			continue
		}
		if _, err := w.Write(p); err != nil {
			delete(f.s.subs, sub)
		}
	}
	return len(p), nil
}

// takeStdin returns the stdin writer for one attach session, nil if the
// container's stdin is closed or, StdinOnce, was had by a session before.
func (s *stdio) takeStdin() io.Writer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stdin == nil || s.once && s.stdinTaken {
		return nil
	}
	s.stdinTaken = true
	return s.stdin
}

// closeStdin closes the container's stdin: the shim holds a write end of
// the FIFO too (so that an agent restart does not end it), so the task is
// told to close it, and the container records that it was closed.
func (r *Runtime) closeStdin(id string, s *stdio) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stdin == nil {
		return
	}
	s.stdin.Close()
	s.stdin = nil
	ctx, cancel := context.WithTimeout(r.ns(context.Background()), deleteTimeout)
	defer cancel()
	c, err := r.c.LoadContainer(ctx, id)
	if err != nil {
		return
	}
	if _, err := c.SetLabels(ctx, map[string]string{labelStdinClosed: "true"}); err != nil {
		r.log.Warn("record closed stdin", "container", id, "err", err)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return
	}
	if err := task.CloseIO(ctx, client.WithStdinCloser); err != nil && !errdefs.IsNotFound(err) {
		r.log.Warn("close container stdin", "container", id, "err", err)
	}
}

// release closes the agent's ends of the FIFOs, leaving the FIFOs in place
// (for the next agent to open, or removal by forgetIO).
func (s *stdio) release() {
	s.dio.Cancel()
	s.mu.Lock()
	s.stdin = nil
	s.mu.Unlock()
	for _, c := range []io.Closer{s.dio.Stdin, s.dio.Stdout, s.dio.Stderr} {
		if c != nil {
			c.Close()
		}
	}
}

func (r *Runtime) fifoSet(id string, tty bool) cio.Config {
	dir := filepath.Join(r.ioDir, id)
	cfg := cio.Config{
		Stdin:    filepath.Join(dir, "stdin"),
		Stdout:   filepath.Join(dir, "stdout"),
		Stderr:   filepath.Join(dir, "stderr"),
		Terminal: tty,
	}
	if tty {
		cfg.Stderr = "" // a terminal merges the two
	}
	return cfg
}

// openIO makes (or, after an agent restart, opens again) the container's
// FIFOs and starts copying its output to logPath. withStdin opens the
// stdin FIFO too (not once the container's stdin has been closed).
func (r *Runtime) openIO(id, logPath string, tty, once, withStdin bool) (*stdio, error) {
	cfg := r.fifoSet(id, tty)
	dir := filepath.Dir(cfg.Stdout)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("container %s stdio: %w", id, err)
	}
	if !withStdin {
		cfg.Stdin = ""
	}
	dio, err := cio.NewDirectIO(context.Background(), cio.NewFIFOSet(cfg, func() error { return os.RemoveAll(dir) }))
	if err != nil {
		return nil, fmt.Errorf("container %s stdio: %w", id, err)
	}
	var log io.Writer = io.Discard
	var logf *os.File
	if logPath != "" {
		if logf, err = os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640); err != nil {
			dio.Cancel()
			dio.Close()
			return nil, fmt.Errorf("container %s log: %w", id, err)
		}
		log = logf
	}
	s := &stdio{tty: tty, once: once, dio: dio, done: make(chan struct{}), subs: map[*attachSub]struct{}{}}
	if withStdin {
		s.stdin = dio.Stdin
	}
	go func() {
		defer close(s.done)
		var stderr io.Reader = eofOnly{}
		if !tty {
			stderr = io.TeeReader(dio.Stderr, fanout{s: s, stderr: true})
		}
		if err := logdriver.Copy(log, io.TeeReader(dio.Stdout, fanout{s: s}), stderr, time.Now); err != nil {
			r.log.Debug("container output", "container", id, "err", err)
		}
		if logf != nil {
			logf.Close()
		}
	}()
	r.mu.Lock()
	r.stdio[id] = s
	r.mu.Unlock()
	return s, nil
}

// eofOnly is a stream that has ended (a TTY container's stderr).
type eofOnly struct{}

func (eofOnly) Read([]byte) (int, error) { return 0, io.EOF }

func (r *Runtime) stdioOf(id string) *stdio {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stdio[id]
}

// forgetIO waits (bounded) for a finished container's output to be copied,
// then closes and removes its FIFOs. Call it once the task is deleted.
func (r *Runtime) forgetIO(id string) { r.dropIO(id, true) }

// dropIO is forgetIO; without drain it does not wait (a task that was
// never created never opened the FIFOs, so their output would not end).
func (r *Runtime) dropIO(id string, drain bool) {
	r.mu.Lock()
	s := r.stdio[id]
	delete(r.stdio, id)
	r.mu.Unlock()
	if s == nil {
		os.RemoveAll(filepath.Join(r.ioDir, id)) // left by an earlier agent
		return
	}
	if drain {
		select {
		case <-s.done:
		case <-time.After(drainWait):
			r.log.Warn("container output still open after its task was deleted", "container", id)
		}
	}
	s.release()
	s.dio.Close()
}

// reopenIO runs at start: containers with Stdin whose task still exists
// get their output copied to their log again (from where the last agent
// stopped reading: the FIFOs kept what it did not read), and their stdin
// back for attach sessions unless it was closed.
func (r *Runtime) reopenIO(ctx context.Context) error {
	ctx = r.ns(ctx)
	cs, err := r.c.Containers(ctx, fmt.Sprintf("labels.%q==true", labelStdin))
	if err != nil {
		return fmt.Errorf("containers with stdin: %w", err)
	}
	for _, c := range cs {
		labels, err := c.Labels(ctx)
		if err != nil {
			continue
		}
		if _, err := c.Task(ctx, nil); errdefs.IsNotFound(err) {
			continue
		} else if err != nil {
			return fmt.Errorf("container %s task: %w", c.ID(), err)
		}
		tty, _ := strconv.ParseBool(labels[labelTTY])
		once, _ := strconv.ParseBool(labels[labelStdinOnce])
		closed, _ := strconv.ParseBool(labels[labelStdinClosed])
		if _, err := os.Stat(filepath.Join(r.ioDir, c.ID())); err != nil {
			r.log.Warn("container's FIFOs are gone: its output is no longer logged", "container", c.ID(), "err", err)
			continue
		}
		if _, err := r.openIO(c.ID(), labels[labelLogPath], tty, once, !closed); err != nil {
			// One container's trouble must not keep the node down.
			r.log.Warn("reopening a container's FIFOs", "container", c.ID(), "err", err)
		}
	}
	return nil
}

// Attach connects a client to a container created with Stdin (see
// krt.Attacher).
func (r *Runtime) Attach(ctx context.Context, id string, opts krt.AttachOptions) error {
	s := r.stdioOf(id)
	if s == nil {
		return fmt.Errorf("attach to %s: %w", id, krt.ErrNoStdio)
	}
	var stdin io.Writer
	if opts.Stdin != nil {
		if stdin = s.takeStdin(); stdin == nil {
			return fmt.Errorf("attach to %s: %w", id, krt.ErrStdinClosed)
		}
		if s.once {
			// StdinOnce: the container's stdin ends with this session.
			defer r.closeStdin(id, s)
		}
	}
	sub := &attachSub{stdout: opts.Stdout, stderr: opts.Stderr}
	if s.tty {
		sub.stderr = nil
	}
	s.subsMu.Lock()
	s.subs[sub] = struct{}{}
	s.subsMu.Unlock()
	defer func() {
		s.subsMu.Lock()
		delete(s.subs, sub)
		s.subsMu.Unlock()
	}()

	if opts.Resize != nil {
		go r.resize(ctx, id, s.tty, opts.Resize)
	}
	stdinDone := make(chan struct{})
	if stdin != nil {
		go func() {
			defer close(stdinDone)
			if _, err := io.Copy(stdin, opts.Stdin); err != nil {
				r.log.Debug("attach stdin", "container", id, "err", err)
			}
		}()
	}
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return nil
	case <-stdinDone:
	}
	if !s.once {
		return nil // the client's input ended: detach, stdin stays open
	}
	r.closeStdin(id, s)
	select {
	case <-s.done:
	case <-ctx.Done():
	}
	return nil
}

// resize applies a TTY client's terminal sizes until the channel closes.
func (r *Runtime) resize(ctx context.Context, id string, tty bool, sizes <-chan krt.TerminalSize) {
	bg := r.ns(context.WithoutCancel(ctx))
	for sz := range sizes {
		if !tty {
			continue
		}
		c, err := r.c.LoadContainer(bg, id)
		if err != nil {
			continue
		}
		task, err := c.Task(bg, nil)
		if err != nil {
			continue
		}
		if err := task.Resize(bg, uint32(sz.Width), uint32(sz.Height)); err != nil {
			r.log.Debug("resize container terminal", "container", id, "err", err)
		}
	}
}
