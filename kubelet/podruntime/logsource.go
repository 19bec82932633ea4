package podruntime

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/skiffkube/skiff/kubelet/logs"
	"github.com/skiffkube/skiff/kubelet/nodeapi"
	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// ContainerLog finds the log of a pod's container: its newest attempt, or
// with previous the one before (what `kubectl logs --previous` shows).
func (r *Runtime) ContainerLog(ctx context.Context, namespace, pod, container string, previous bool) (logs.File, error) {
	list, err := r.c.ListContainers(ctx, krt.ListFilter{})
	if err != nil {
		return logs.File{}, err
	}
	var attempts []krt.ContainerStatus
	for _, s := range list {
		if s.PodNamespace == namespace && s.PodName == pod && s.Name == container && s.LogPath != "" {
			attempts = append(attempts, s)
		}
	}
	// Newest first; a pod recreated with the same name has a new UID, so
	// prefer the newest creation before the attempt number.
	for i := 1; i < len(attempts); i++ {
		for j := i; j > 0 && newer(attempts[j], attempts[j-1]); j-- {
			attempts[j], attempts[j-1] = attempts[j-1], attempts[j]
		}
	}
	idx := 0
	if previous {
		idx = 1
	}
	if len(attempts) <= idx {
		what := "container"
		if previous {
			what = "previous terminated container"
		}
		return logs.File{}, fmt.Errorf("%w: %s %q in pod %s/%s not found", logs.ErrNotFound, what, container, namespace, pod)
	}
	s := attempts[idx]
	id := s.ID
	return logs.File{Path: s.LogPath, Running: func() bool {
		st, err := r.c.ContainerStatus(context.WithoutCancel(ctx), id)
		return err == nil && st.State == krt.StateRunning
	}}, nil
}

func newer(a, b krt.ContainerStatus) bool {
	if a.PodUID != b.PodUID {
		return a.CreatedAt.After(b.CreatedAt)
	}
	return a.Attempt > b.Attempt
}

// runningContainer finds the pod's running container of that name.
func (r *Runtime) runningContainer(ctx context.Context, namespace, pod, container string) (krt.ContainerStatus, error) {
	list, err := r.c.ListContainers(ctx, krt.ListFilter{})
	if err != nil {
		return krt.ContainerStatus{}, err
	}
	for _, s := range list {
		if s.PodNamespace == namespace && s.PodName == pod && s.Name == container && s.State == krt.StateRunning {
			return s, nil
		}
	}
	return krt.ContainerStatus{}, fmt.Errorf("%w: container %q in pod %s/%s", nodeapi.ErrContainerNotFound, container, namespace, pod)
}

// forwardResizes passes the client's terminal sizes on to the runtime
// until resize closes; once stop is called (the session is over) they are
// drained and dropped. A nil resize gives a nil channel.
func forwardResizes(resize <-chan nodeapi.TerminalSize) (sizes chan krt.TerminalSize, stop func()) {
	done := make(chan struct{})
	if resize != nil {
		sizes = make(chan krt.TerminalSize)
		go func() {
			defer close(sizes)
			for sz := range resize {
				select {
				case sizes <- krt.TerminalSize{Width: sz.Width, Height: sz.Height}:
				case <-done:
				}
			}
		}()
	}
	return sizes, func() { close(done) }
}

// ExecInPod runs cmd in the pod's running container (the node API's exec).
func (r *Runtime) ExecInPod(ctx context.Context, namespace, pod, container string, cmd []string,
	stdin io.Reader, stdout, stderr io.Writer, tty bool, resize <-chan nodeapi.TerminalSize) (int, error) {
	s, err := r.runningContainer(ctx, namespace, pod, container)
	if err != nil {
		return 0, err
	}
	sizes, stop := forwardResizes(resize)
	defer stop()
	return r.c.Exec(ctx, s.ID, krt.ExecOptions{Command: cmd, Stdin: stdin, Stdout: stdout, Stderr: stderr, TTY: tty, Resize: sizes})
}

// AttachToPod connects to the stdio of the pod's running container (the
// node API's attach). A container created without stdin, or a runtime that
// holds no stdio, gives nodeapi.ErrNoStdio: attach then follows its log.
func (r *Runtime) AttachToPod(ctx context.Context, namespace, pod, container string,
	stdin io.Reader, stdout, stderr io.Writer, tty bool, resize <-chan nodeapi.TerminalSize) error {
	s, err := r.runningContainer(ctx, namespace, pod, container)
	if err != nil {
		return err
	}
	a, ok := r.c.(krt.Attacher)
	if !ok {
		return fmt.Errorf("container %q in pod %s/%s: %w", container, namespace, pod, nodeapi.ErrNoStdio)
	}
	sizes, stop := forwardResizes(resize)
	err = a.Attach(ctx, s.ID, krt.AttachOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr, Resize: sizes})
	stop()
	switch {
	case errors.Is(err, krt.ErrNoStdio):
		return fmt.Errorf("container %q in pod %s/%s: %w", container, namespace, pod, nodeapi.ErrNoStdio)
	case errors.Is(err, krt.ErrStdinClosed):
		return fmt.Errorf("container %q in pod %s/%s: its stdin is closed (stdinOnce, attached before)", container, namespace, pod)
	}
	return err
}
