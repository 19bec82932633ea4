package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Errors the sync loop tells apart (wrap-checked with errors.Is).
var (
	// ErrNotFound: no such container or image.
	ErrNotFound = errors.New("runtime: not found")
	// ErrImageNeverPull: the image is not present and the policy forbids pulling.
	ErrImageNeverPull = errors.New("runtime: image not present and pull policy is Never")
	// ErrImagePull: the image could not be fetched.
	ErrImagePull = errors.New("runtime: image pull failed")
	// ErrInvalidConfig: the container configuration cannot be run as given
	// (the pod reports CreateContainerConfigError / CreateContainerError).
	ErrInvalidConfig = errors.New("runtime: invalid container configuration")
)

// PullPolicy mirrors a container's imagePullPolicy.
type PullPolicy string

const (
	PullAlways       PullPolicy = "Always"
	PullIfNotPresent PullPolicy = "IfNotPresent"
	PullNever        PullPolicy = "Never"
)

// Image is a stored image.
type Image struct {
	// Ref is the normalized name ("docker.io/library/nginx:1.27").
	Ref    string
	Digest string
	// Size is the content size in bytes (compressed layers and metadata).
	Size int64
	// Pulled says EnsureImage fetched it from a registry just now (false:
	// it was already present).
	Pulled bool
}

// Credential is what an image pull secret gives for a registry: a user
// name and password, or an identity (refresh) token.
type Credential struct {
	Username      string
	Password      string
	IdentityToken string
}

// PullError is a failed pull; it matches ErrImagePull. Its message is
// containerd's CRI's: `failed to pull and unpack image "ref": <cause>`.
type PullError struct {
	Image string
	Err   error
}

func (e *PullError) Error() string {
	return fmt.Sprintf("failed to pull and unpack image %q: %v", e.Image, e.Err)
}

func (e *PullError) Unwrap() []error { return []error{ErrImagePull, e.Err} }

// Mount binds a host path into the container.
type Mount struct {
	HostPath      string
	ContainerPath string
	ReadOnly      bool
	// RecursiveReadOnly, with ReadOnly, makes what is mounted below the
	// host path read-only too (a plain read-only bind leaves submounts
	// writable). A runtime without RecursiveReadOnlyMounts refuses it
	// with ErrInvalidConfig rather than making a weaker mount.
	RecursiveReadOnly bool
}

// RecursiveReadOnlyMounts is implemented by runtimes that can make a
// read-only bind mount recursively read-only (Mount.RecursiveReadOnly),
// as a CRI runtime handler reports the feature to the kubelet. It is
// decided once, when the runtime starts.
type RecursiveReadOnlyMounts interface {
	RecursiveReadOnlyMounts() bool
}

// Resources are the container's cgroup limits; zero means unset.
type Resources struct {
	// CPUShares is the relative weight (Kubernetes: milli-CPU request*1024/1000, min 2).
	CPUShares uint64
	// CPUQuota and CPUPeriod are the CFS hard limit in microseconds per period.
	CPUQuota  int64
	CPUPeriod uint64
	// MemoryLimit in bytes; the kernel OOM-kills the container above it.
	MemoryLimit int64
}

// Security is the container's securityContext as the runtime applies it.
type Security struct {
	RunAsUser              *int64
	RunAsGroup             *int64
	ReadOnlyRootFilesystem bool
	Privileged             bool
	// AddCapabilities and DropCapabilities use Kubernetes names
	// ("NET_ADMIN"; "ALL" in the drop list drops every capability first).
	AddCapabilities  []string
	DropCapabilities []string
}

// ContainerConfig is everything needed to create one container of a pod.
type ContainerConfig struct {
	PodUID       string
	PodNamespace string
	PodName      string
	// Name is the container's name in the pod spec.
	Name string
	// Attempt counts restarts of this container in this pod (0 first).
	Attempt int
	Image   string
	// Command replaces the image entrypoint and Args its cmd, as in a pod spec.
	Command    []string
	Args       []string
	Env        []string // KEY=VALUE, appended to (and overriding) the image's
	WorkingDir string
	// NetnsPath is the pod's network namespace; empty means the host network.
	NetnsPath string
	Hostname  string
	// LogPath receives the container's stdout and stderr.
	LogPath string
	// Stdin keeps the container's stdin open for attach sessions;
	// StdinOnce closes it when the first one ends; TTY gives the container
	// a terminal (stdout and stderr merged), as in a pod spec.
	Stdin, StdinOnce, TTY bool

	Mounts    []Mount
	Resources Resources
	Security  Security
	// Labels are extra labels recorded on the container.
	Labels map[string]string
}

// State of a container.
type State string

const (
	StateCreated State = "Created"
	StateRunning State = "Running"
	StateExited  State = "Exited"
	StateUnknown State = "Unknown"
)

// Exit reasons as Kubernetes reports them in a terminated state.
const (
	ReasonCompleted = "Completed"
	ReasonError     = "Error"
	ReasonOOMKilled = "OOMKilled"
)

// ContainerStatus is what the runtime knows about one container.
type ContainerStatus struct {
	ID           string
	PodUID       string
	PodNamespace string
	PodName      string
	Name         string
	Attempt      int
	Image        string
	State        State
	Pid          uint32
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ExitCode     int
	// Reason is set once exited: Completed, Error or OOMKilled.
	Reason  string
	LogPath string
	Labels  map[string]string
}

// ListFilter narrows ListContainers; the zero value lists every container.
type ListFilter struct {
	PodUID string
}

// ExecOptions runs a command in a running container.
type ExecOptions struct {
	Command []string
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	TTY     bool
	// Resize, with TTY, carries the client's terminal size changes; the
	// runtime reads it until the caller closes it.
	Resize <-chan TerminalSize
}

// AttachOptions connect a client to a running container started with
// Stdin (see Attacher).
type AttachOptions struct {
	// Stdin, if set, is copied to the container's stdin; nil attaches
	// output only.
	Stdin  io.Reader
	Stdout io.Writer
	// Stderr is unused for a TTY container (its output is all on Stdout).
	Stderr io.Writer
	// Resize carries the client's terminal size changes for a TTY
	// container; the runtime reads it until the caller closes it.
	Resize <-chan TerminalSize
}

// ErrNoStdio: the runtime holds no stdio of the container (it was created
// without Stdin): attach can only follow its log.
var ErrNoStdio = errors.New("runtime: the container's stdio is not held by the agent (spec.containers[].stdin is false)")

// ErrStdinClosed: the container's stdin has been closed (StdinOnce after
// an attach, or the agent restarted since the container started).
var ErrStdinClosed = errors.New("runtime: the container's stdin is closed")

// Attacher is a Runtime that can attach to containers created with Stdin.
type Attacher interface {
	// Attach streams the container's output from now on to opts' writers
	// and opts.Stdin to its stdin, until the container's output ends, ctx
	// ends, or (unless the container is StdinOnce) opts.Stdin ends. A
	// container created without Stdin gives ErrNoStdio.
	Attach(ctx context.Context, id string, opts AttachOptions) error
}

// ExitWatcher is a Runtime that reports containers' exits as they happen,
// so the agent need not poll to notice them (the kubelet's event-driven
// pod lifecycle events).
type ExitWatcher interface {
	// WatchExits calls exited for every container whose process ends,
	// until ctx ends. Exits may be missed (the runtime restarting), so it
	// speeds up noticing them and does not replace looking.
	WatchExits(ctx context.Context, exited func(containerID, podUID string))
}

// TerminalSize is a terminal's width and height in characters.
type TerminalSize struct {
	Width, Height uint16
}

// Runtime runs a node's containers. Every method is safe for concurrent use.
type Runtime interface {
	// Version names the runtime and its version for the node's status.
	Version(ctx context.Context) (name, version string, err error)

	// EnsureImage makes ref present and ready to run, honouring policy.
	// A pull tries creds in order and stops at the first that works;
	// without creds it pulls anonymously. A failed pull is a *PullError.
	EnsureImage(ctx context.Context, ref string, policy PullPolicy, creds ...Credential) (Image, error)
	// ImagePresent says whether ref is stored here (so EnsureImage with
	// PullIfNotPresent would not pull); an invalid ref is ErrInvalidConfig.
	ImagePresent(ctx context.Context, ref string) (bool, error)
	// ImportImages loads the images of an OCI or Docker archive and returns their refs.
	ImportImages(ctx context.Context, tarPath string) ([]string, error)
	ListImages(ctx context.Context) ([]Image, error)
	RemoveImage(ctx context.Context, ref string) error

	// CreateContainer prepares the container (its root file system and
	// configuration) without starting it and returns its ID.
	CreateContainer(ctx context.Context, cfg ContainerConfig) (string, error)
	StartContainer(ctx context.Context, id string) error
	// StopContainer sends SIGTERM, then SIGKILL once grace has passed, and
	// returns when the container has exited.
	StopContainer(ctx context.Context, id string, grace time.Duration) error
	// RemoveContainer stops the container at once if it still runs and
	// deletes it with its root file system.
	RemoveContainer(ctx context.Context, id string) error
	ContainerStatus(ctx context.Context, id string) (ContainerStatus, error)
	ListContainers(ctx context.Context, filter ListFilter) ([]ContainerStatus, error)
	// Exec runs a command in the running container and returns its exit code.
	Exec(ctx context.Context, id string, opts ExecOptions) (int, error)
	// RemovePod releases what the runtime holds for a pod beyond its
	// containers (its cgroup parent); call it once they are removed.
	RemovePod(ctx context.Context, podUID string) error
}
