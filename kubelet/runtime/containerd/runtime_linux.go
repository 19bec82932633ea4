//go:build linux

package containerd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/identifiers"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"

	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// Defaults for Config's zero values.
const (
	DefaultSocket      = "/run/containerd/containerd.sock"
	DefaultNamespace   = "skiff"
	DefaultSnapshotter = "overlayfs"
	DefaultCgroupRoot  = "/skiff"
	runcRuntime        = "io.containerd.runc.v2"
)

// Labels recorded on every container (see the package comment).
const (
	labelPodUID       = "skiff.io/pod-uid"
	labelPodName      = "skiff.io/pod-name"
	labelPodNamespace = "skiff.io/pod-namespace"
	labelName         = "skiff.io/container-name"
	labelAttempt      = "skiff.io/attempt"
	labelLogPath      = "skiff.io/log-path"
	labelCgroup       = "skiff.io/cgroup"
	labelStartedAt    = "skiff.io/started-at"
	labelFinishedAt   = "skiff.io/finished-at"
	labelExitCode     = "skiff.io/exit-code"
	labelReason       = "skiff.io/reason"
	labelStdin        = "skiff.io/stdin"
	labelStdinOnce    = "skiff.io/stdin-once"
	labelTTY          = "skiff.io/tty"
	labelStdinClosed  = "skiff.io/stdin-closed"
)

// Config selects the containerd to talk to.
type Config struct {
	// Socket is containerd's gRPC socket (default /run/containerd/containerd.sock).
	Socket string
	// Namespace is the containerd namespace holding skiff's images and
	// containers (default "skiff").
	Namespace string
	// Snapshotter unpacks images (default overlayfs).
	Snapshotter string
	// CgroupRoot is the cgroup parent of every pod (default /skiff).
	CgroupRoot string
	// LogDriver is the absolute path of an executable that the containerd
	// shim runs as `<LogDriver> log-driver <log path>` to write each
	// container's output in CRI format (kubelet/logdriver; the skiff binary
	// itself in production). Required: the shim's own file logging
	// (cio.LogFile) loses output. On task delete, containerd 1.6's shim
	// waits at most 2 s for its copy goroutines before closing the pipes,
	// and under load the last lines of a container that just exited were
	// gone. The shim instead closes a driver's pipes and waits for it to
	// read them to the end.
	LogDriver string
	// IODir holds the FIFOs of containers with stdin, one directory per
	// container (default /run/skiff/<Namespace>/io). It must outlive an
	// agent restart for the next agent to find them.
	IODir string
	// ConnectTimeout bounds the first connection (default 10s).
	ConnectTimeout time.Duration
	Logger         *slog.Logger
}

// Runtime is the containerd implementation of runtime.Runtime.
type Runtime struct {
	c           *client.Client
	namespace   string
	snapshotter string
	cgroupRoot  string
	log         *slog.Logger
	cgroups     cgroupFS
	logDriver   string
	ioDir       string
	// rro: read-only mounts can be made recursively read-only
	// (detectRecursiveReadOnly, once at start).
	rro bool

	// stopping serialises StopContainer per container so two callers do
	// not race their SIGKILL escalations; stdio holds the FIFOs of the
	// containers with stdin.
	mu       sync.Mutex
	stopping map[string]*sync.Mutex
	stdio    map[string]*stdio
}

var (
	_ krt.Runtime                 = (*Runtime)(nil)
	_ krt.RecursiveReadOnlyMounts = (*Runtime)(nil)
)

// New connects to containerd and checks that it answers.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.Socket == "" {
		cfg.Socket = DefaultSocket
	}
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if err := identifiers.Validate(cfg.Namespace); err != nil {
		return nil, fmt.Errorf("containerd: namespace %q: %w", cfg.Namespace, err)
	}
	if cfg.Snapshotter == "" {
		cfg.Snapshotter = DefaultSnapshotter
	}
	if cfg.CgroupRoot == "" {
		cfg.CgroupRoot = DefaultCgroupRoot
	}
	if cfg.CgroupRoot[0] != '/' {
		return nil, fmt.Errorf("containerd: cgroup root %q must be an absolute cgroup path", cfg.CgroupRoot)
	}
	if cfg.LogDriver == "" {
		return nil, errors.New("containerd: no log driver set (Config.LogDriver): containers' output is written only through one")
	}
	if st, err := os.Stat(cfg.LogDriver); err != nil || !filepath.IsAbs(cfg.LogDriver) || st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("containerd: log driver %q must be an absolute path to an executable", cfg.LogDriver)
	}
	if cfg.IODir == "" {
		cfg.IODir = filepath.Join("/run/skiff", cfg.Namespace, "io")
	}
	if !filepath.IsAbs(cfg.IODir) {
		return nil, fmt.Errorf("containerd: IO directory %q must be absolute", cfg.IODir)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := client.New(cfg.Socket, client.WithDefaultNamespace(cfg.Namespace), client.WithTimeout(cfg.ConnectTimeout))
	if err != nil {
		return nil, fmt.Errorf("containerd socket %s: %w", cfg.Socket, err)
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	if ok, err := c.IsServing(cctx); err != nil || !ok {
		c.Close()
		return nil, fmt.Errorf("containerd socket %s is not serving: %w", cfg.Socket, err)
	}
	cgfs, err := detectCgroupFS()
	if err != nil {
		c.Close()
		return nil, err
	}
	r := &Runtime{
		c:           c,
		namespace:   cfg.Namespace,
		snapshotter: cfg.Snapshotter,
		cgroupRoot:  cfg.CgroupRoot,
		log:         cfg.Logger,
		cgroups:     cgfs,
		logDriver:   cfg.LogDriver,
		ioDir:       cfg.IODir,
		stopping:    map[string]*sync.Mutex{},
		stdio:       map[string]*stdio{},
	}
	var why string
	r.rro, why = detectRecursiveReadOnly(ctx)
	cfg.Logger.Info("recursive read-only mounts", "supported", r.rro, "reason", why)
	if err := r.reopenIO(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// Close releases the connection and the agent's ends of the containers'
// FIFOs; containers keep running (their output waits in the FIFOs for the
// next agent, up to the pipe's size).
func (r *Runtime) Close() error {
	r.mu.Lock()
	held := r.stdio
	r.stdio = map[string]*stdio{}
	r.mu.Unlock()
	for _, s := range held {
		s.release()
	}
	return r.c.Close()
}

// ns puts skiff's containerd namespace on ctx.
func (r *Runtime) ns(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, r.namespace)
}

// Version reports containerd's version.
func (r *Runtime) Version(ctx context.Context) (string, string, error) {
	v, err := r.c.Version(r.ns(ctx))
	if err != nil {
		return "", "", fmt.Errorf("containerd version: %w", err)
	}
	return "containerd", v.Version, nil
}

// translate maps containerd's errors onto the runtime package's, in one place.
func translate(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case errdefs.IsNotFound(err):
		return fmt.Errorf("%s: %w: %w", what, krt.ErrNotFound, err)
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

var errStillRunning = errors.New("containerd: container is still running")
