package nodeapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/remotecommand"

	"github.com/skiffkube/skiff/kubelet/logs"
)

// Attacher connects to the stdio of a pod's running container created
// with stdin: true (podruntime.Runtime implements it). A container without
// gives ErrNoStdio, and attach follows its log instead, output only.
type Attacher interface {
	AttachToPod(ctx context.Context, namespace, pod, container string,
		stdin io.Reader, stdout, stderr io.Writer, tty bool, resize <-chan TerminalSize) error
}

// ErrNoStdio is what an Attacher returns for a container whose stdio the
// node does not hold (its output goes straight to the log driver).
var ErrNoStdio = errors.New("nodeapi: the container has no stdin (spec.containers[].stdin is false)")

// attachAdapter connects a client to a container's stdio if the node holds
// it, else streams what the container writes from now on, read from its
// log as it grows: stdout and stderr apart, or merged for a TTY.
type attachAdapter struct{ pods Pods }

func (a attachAdapter) AttachContainer(ctx context.Context, name, _ string, container string,
	in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	ns, pod := splitPodName(name)
	sizes, stop := forwardSizes(resize)
	defer stop()
	var stdout, stderr io.Writer
	if out != nil {
		stdout = out
	}
	if errw != nil {
		stderr = errw
	}
	err := a.pods.AttachToPod(ctx, ns, pod, container, in, stdout, stderr, tty, sizes)
	if !errors.Is(err, ErrNoStdio) {
		return err
	}
	if in != nil {
		return fmt.Errorf("attaching stdin to container %q in pod %s/%s: %w", container, ns, pod, err)
	}
	return a.followLog(ctx, ns, pod, container, out, errw, tty)
}

func (a attachAdapter) followLog(ctx context.Context, ns, pod, container string, out, errw io.WriteCloser, tty bool) error {
	f, err := a.pods.ContainerLog(ctx, ns, pod, container, false)
	if err != nil {
		return err
	}
	if f.Running == nil || !f.Running() {
		return fmt.Errorf("%w: container %q in pod %s/%s is not running", ErrContainerNotFound, container, ns, pod)
	}
	follow := func(stream string, w io.Writer) error {
		return logs.Read(ctx, f.Path, logs.Options{TailLines: 0, Follow: true, Running: f.Running, Stream: stream, PollInterval: 100 * time.Millisecond}, w)
	}
	switch {
	case out != nil && (tty || errw == nil):
		return follow("", out)
	case out == nil && errw != nil:
		return follow("stderr", errw)
	case out == nil:
		return nil
	}
	var wg sync.WaitGroup
	var errOut error
	wg.Add(1)
	go func() {
		defer wg.Done()
		errOut = follow("stderr", errw)
	}()
	err = follow("stdout", out)
	wg.Wait()
	return errors.Join(err, errOut)
}

func serveAttach(w http.ResponseWriter, r *http.Request, pods Pods) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ns, pod, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	remotecommand.ServeAttach(w, r, attachAdapter{pods}, ns+"/"+pod, "", container, opts,
		streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}
