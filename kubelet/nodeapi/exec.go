package nodeapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// Stream timeouts, as the kubelet's defaults.
const (
	streamIdleTimeout     = 4 * time.Hour
	streamCreationTimeout = 30 * time.Second
)

// ErrContainerNotFound is what an Execer returns for an unknown or
// stopped container; it becomes a stream error the client shows.
var ErrContainerNotFound = errors.New("nodeapi: container not found or not running")

// Execer runs a command in a pod's running container and returns its exit
// code (podruntime.Runtime implements it). resize, for a TTY, carries the
// client's terminal size changes and is closed when the stream ends.
type Execer interface {
	ExecInPod(ctx context.Context, namespace, pod, container string, cmd []string,
		stdin io.Reader, stdout, stderr io.Writer, tty bool, resize <-chan TerminalSize) (int, error)
}

// TerminalSize is a terminal's width and height in characters.
type TerminalSize struct {
	Width, Height uint16
}

// execAdapter fits an Execer to the streaming library's executor, turning
// a non-zero exit code into the ExitError that reports it to kubectl.
type execAdapter struct{ e Execer }

func (a execAdapter) ExecInContainer(ctx context.Context, name, _ string, container string, cmd []string,
	in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	sizes, stop := forwardSizes(resize)
	defer stop()
	ns, pod := splitPodName(name)
	var stdout, stderr io.Writer
	if out != nil {
		stdout = out
	}
	if errw != nil {
		stderr = errw
	}
	code, err := a.e.ExecInPod(ctx, ns, pod, container, cmd, in, stdout, stderr, tty, sizes)
	if err != nil {
		return err
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: errors.New("command terminated with non-zero exit code"), Code: code}
	}
	return nil
}

// forwardSizes turns the streaming library's terminal sizes into the node
// API's, until stop; the channel returned is closed then (nil for nil).
func forwardSizes(resize <-chan remotecommand.TerminalSize) (sizes <-chan TerminalSize, stop func()) {
	if resize == nil {
		return nil, func() {}
	}
	ch := make(chan TerminalSize, 1)
	done := make(chan struct{})
	go func() {
		defer close(ch)
		for {
			select {
			case sz, ok := <-resize:
				if !ok {
					return
				}
				select {
				case ch <- TerminalSize{Width: sz.Width, Height: sz.Height}:
				case <-done:
					return
				}
			case <-done:
				return
			}
		}
	}()
	return ch, func() { close(done) }
}

func splitPodName(name string) (string, string) {
	for i := 0; i < len(name); i++ {
		if name[i] == '/' {
			return name[:i], name[i+1:]
		}
	}
	return "", name
}

func serveExec(w http.ResponseWriter, r *http.Request, e Execer) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	cmd := r.URL.Query()["command"]
	if len(cmd) == 0 {
		http.Error(w, "command is required", http.StatusBadRequest)
		return
	}
	ns, pod, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	remotecommand.ServeExec(w, r, execAdapter{e}, ns+"/"+pod, "", container, cmd, opts,
		streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}
