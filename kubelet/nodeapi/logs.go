package nodeapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/skiffkube/skiff/kubelet/logs"
)

// LogFinder locates a container's log (podruntime.Runtime implements it).
type LogFinder interface {
	ContainerLog(ctx context.Context, namespace, pod, container string, previous bool) (logs.File, error)
}

// Pods is what the node API needs of the pod runtime.
type Pods interface {
	LogFinder
	Execer
	Attacher
	PortForwarder
}

// NewHandler serves the node API: container logs, exec, attach (stdin
// and TTY for containers with stdin, else output only) and port-forward (SPDY streams, as the kubelet's /exec, /attach and
// /portForward endpoints; POST and GET, as clients use).
func NewHandler(pods Pods) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", func(w http.ResponseWriter, r *http.Request) {
		serveLogs(w, r, pods)
	})
	exec := func(w http.ResponseWriter, r *http.Request) { serveExec(w, r, pods) }
	mux.HandleFunc("POST /exec/{namespace}/{pod}/{container}", exec)
	mux.HandleFunc("GET /exec/{namespace}/{pod}/{container}", exec)
	attach := func(w http.ResponseWriter, r *http.Request) { serveAttach(w, r, pods) }
	mux.HandleFunc("POST /attach/{namespace}/{pod}/{container}", attach)
	mux.HandleFunc("GET /attach/{namespace}/{pod}/{container}", attach)
	pf := func(w http.ResponseWriter, r *http.Request) { servePortForward(w, r, pods) }
	mux.HandleFunc("POST /portForward/{namespace}/{pod}", pf)
	mux.HandleFunc("GET /portForward/{namespace}/{pod}", pf)
	return mux
}

// logOptions parses the PodLogOptions query parameters.
func logOptions(r *http.Request, now time.Time) (opts logs.Options, previous bool, err error) {
	q := r.URL.Query()
	boolean := func(name string) (bool, error) {
		v := q.Get(name)
		if v == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("%s=%q is not a boolean", name, v)
		}
		return b, nil
	}
	integer := func(name string) (int64, bool, error) {
		v := q.Get(name)
		if v == "" {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, false, fmt.Errorf("%s=%q must be a non-negative integer", name, v)
		}
		return n, true, nil
	}
	if opts.Follow, err = boolean("follow"); err != nil {
		return
	}
	if previous, err = boolean("previous"); err != nil {
		return
	}
	if opts.Timestamps, err = boolean("timestamps"); err != nil {
		return
	}
	opts.TailLines = -1
	if n, ok, e := integer("tailLines"); e != nil {
		return opts, previous, e
	} else if ok {
		opts.TailLines = n
	}
	if n, ok, e := integer("limitBytes"); e != nil {
		return opts, previous, e
	} else if ok {
		if n == 0 {
			return opts, previous, errors.New("limitBytes must be greater than 0")
		}
		opts.LimitBytes = n
	}
	since, hasSeconds, e := integer("sinceSeconds")
	if e != nil {
		return opts, previous, e
	}
	if hasSeconds {
		opts.SinceTime = now.Add(-time.Duration(since) * time.Second)
	}
	if v := q.Get("sinceTime"); v != "" {
		if hasSeconds {
			return opts, previous, errors.New("at most one of sinceTime or sinceSeconds may be specified")
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return opts, previous, fmt.Errorf("sinceTime=%q is not an RFC 3339 time", v)
		}
		opts.SinceTime = t
	}
	return opts, previous, nil
}

func serveLogs(w http.ResponseWriter, r *http.Request, finder LogFinder) {
	opts, previous, err := logOptions(r, time.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ns, pod, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	f, err := finder.ContainerLog(r.Context(), ns, pod, container, previous)
	if errors.Is(err, logs.ErrNotFound) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	opts.Running = f.Running
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	out := &flushWriter{w: w}
	if f, ok := w.(http.Flusher); ok && opts.Follow {
		out.flush = f.Flush
	}
	if err := logs.Read(r.Context(), f.Path, opts, out); err != nil && !strings.Contains(err.Error(), "broken pipe") {
		// Headers may be out already; the error can only end the body.
		fmt.Fprintf(w, "\nerror reading log: %v\n", err)
	}
}

// flushWriter flushes after every write while following, so lines reach
// `kubectl logs -f` as they are written.
type flushWriter struct {
	w     http.ResponseWriter
	flush func()
}

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if f.flush != nil {
		f.flush()
	}
	return n, err
}
