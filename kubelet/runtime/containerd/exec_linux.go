//go:build linux

package containerd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"syscall"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"

	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// eofReader closes done when its reader reports EOF, so the exec's stdin
// can be closed inside the container once the caller's input ends.
type eofReader struct {
	r    io.Reader
	done chan struct{}
	seen bool
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && !e.seen {
		e.seen = true
		close(e.done)
	}
	return n, err
}

// Exec runs opts.Command in the running container with the container's
// user, environment and working directory, and returns its exit code once
// it has exited and its output has been copied. Cancelling ctx kills it.
func (r *Runtime) Exec(ctx context.Context, id string, opts krt.ExecOptions) (int, error) {
	if len(opts.Command) == 0 {
		return 0, fmt.Errorf("exec in %s: %w: empty command", id, krt.ErrInvalidConfig)
	}
	ctx = r.ns(ctx)
	c, err := r.c.LoadContainer(ctx, id)
	if err != nil {
		return 0, translate(err, "exec in "+id)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return 0, translate(err, "exec in "+id+" (not running)")
	}
	spec, err := c.Spec(ctx)
	if err != nil {
		return 0, fmt.Errorf("exec in %s: %w", id, err)
	}
	pspec := *spec.Process
	pspec.Args = opts.Command
	pspec.Terminal = opts.TTY

	var stdin *eofReader
	var in io.Reader
	if opts.Stdin != nil {
		stdin = &eofReader{r: opts.Stdin, done: make(chan struct{})}
		in = stdin
	}
	stdout, stderr := opts.Stdout, opts.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil && !opts.TTY {
		stderr = io.Discard
	}
	streams := []cio.Opt{cio.WithStreams(in, stdout, stderr)}
	if opts.TTY {
		streams = append(streams, cio.WithTerminal)
	}
	execID, err := newExecID()
	if err != nil {
		return 0, err
	}
	// The exec outlives a cancelled ctx just long enough to be killed and
	// deleted.
	bg := context.WithoutCancel(ctx)
	p, err := task.Exec(bg, execID, &pspec, cio.NewCreator(streams...))
	if err != nil {
		return 0, fmt.Errorf("exec in %s: %w", id, err)
	}
	defer func() {
		if _, err := p.Delete(bg, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			r.log.Warn("delete exec process", "container", id, "exec", execID, "err", err)
		}
	}()
	exited, err := p.Wait(bg)
	if err != nil {
		return 0, fmt.Errorf("exec in %s: %w", id, err)
	}
	if err := p.Start(bg); err != nil {
		return 0, fmt.Errorf("exec in %s: %w", id, err)
	}
	if opts.TTY && opts.Resize != nil {
		// Drained until the caller closes it, so its sender never blocks;
		// sizes arriving after the exit fail quietly.
		go func() {
			for sz := range opts.Resize {
				if err := p.Resize(bg, uint32(sz.Width), uint32(sz.Height)); err != nil {
					r.log.Debug("resize exec terminal", "container", id, "err", err)
				}
			}
		}()
	}
	if stdin != nil {
		go func() {
			select {
			case <-stdin.done:
				if err := p.CloseIO(bg, client.WithStdinCloser); err != nil && !errdefs.IsNotFound(err) {
					r.log.Debug("close exec stdin", "container", id, "err", err)
				}
			case <-exited:
			}
		}()
	}
	var st client.ExitStatus
	select {
	case st = <-exited:
	case <-ctx.Done():
		_ = p.Kill(bg, syscall.SIGKILL)
		<-exited
		return 0, fmt.Errorf("exec in %s: %w", id, ctx.Err())
	}
	// Wait for the output to be copied before reporting.
	p.IO().Wait()
	code, _, err := st.Result()
	if err != nil {
		return 0, fmt.Errorf("exec in %s: %w", id, err)
	}
	if code == client.UnknownExitStatus && errors.Is(st.Error(), context.Canceled) {
		return 0, fmt.Errorf("exec in %s: %w", id, st.Error())
	}
	return int(code), nil
}

func newExecID() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("exec id: %w", err)
	}
	return "exec-" + hex.EncodeToString(b), nil
}
