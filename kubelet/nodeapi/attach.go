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

// errAttachStdin is what `kubectl attach -i` gets: containers' output goes
// to the log driver and their stdin is not kept open, so there is nothing
// to write to.
var errAttachStdin = errors.New("attaching stdin is not supported: skiff's containers do not keep stdin open; use kubectl exec -i")

// attachAdapter streams what a running container writes from now on, read
// from its log as it grows: stdout and stderr apart, or merged for a TTY.
type attachAdapter struct{ f LogFinder }

func (a attachAdapter) AttachContainer(ctx context.Context, name, _ string, container string,
	in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	if in != nil {
		return errAttachStdin
	}
	if resize != nil {
		go func() {
			for range resize { // nothing to resize without a terminal of our own
			}
		}()
	}
	ns, pod := splitPodName(name)
	f, err := a.f.ContainerLog(ctx, ns, pod, container, false)
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

func serveAttach(w http.ResponseWriter, r *http.Request, f LogFinder) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ns, pod, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	remotecommand.ServeAttach(w, r, attachAdapter{f}, ns+"/"+pod, "", container, opts,
		streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}
