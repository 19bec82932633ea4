package nodeagent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffkube/skiff/kubelet/eviction"
	"github.com/skiffkube/skiff/kubelet/imagegc"
)

// Options describe the node.
type Options struct {
	Client   kubernetes.Interface
	NodeName string
	// NodeIP is the InternalIP reported in node status; the API server
	// reaches the node API there.
	NodeIP string
	// DataDir is skiff's data directory (absolute); the agent keeps its
	// state in <DataDir>/agent and imports the images in
	// <DataDir>/agent/images.
	DataDir string
	// ContainerdSocket defaults to /run/containerd/containerd.sock.
	ContainerdSocket string
	// LogDriver is the executable the containerd shim runs as
	// `<LogDriver> log-driver <path>` to write container logs: the skiff
	// binary itself. Required.
	LogDriver string
	// LogDir defaults to /var/log/pods.
	LogDir string
	// APIAddress is host:port the node API listens on (port 0 picks one).
	APIAddress string
	// Serving is the node API's certificate; ClientCA verifies callers,
	// of which only APIClientUsers (common names) are admitted.
	Serving tls.Certificate
	// GetServing, when set, is asked for the serving certificate at every
	// handshake (one renewed while the agent runs); Serving stands in
	// while it returns nil.
	GetServing     func() *tls.Certificate
	ClientCA       *x509.CertPool
	APIClientUsers []string
	// Capacity overrides what is detected (CPUs, memory, the data
	// directory's disk, 110 pods).
	Capacity corev1.ResourceList
	Labels   map[string]string
	// ImageGC is when unused images are removed (zero: the kubelet's
	// defaults, 85%/80%/2m); ImageFSPath is a path on the file system
	// holding images (empty: containerd's snapshotter root, as containerd
	// reports it).
	ImageGC     imagegc.Policy
	ImageFSPath string
	// EvictionHard are the hard eviction thresholds (--eviction-hard;
	// eviction.DefaultEvictionHard parsed). None: no eviction, and the
	// pressure conditions stay False.
	EvictionHard []eviction.Threshold
	// EvictionPressureTransitionPeriod is how long a pressure condition
	// stays True after its signal recovered (default 5m).
	EvictionPressureTransitionPeriod time.Duration
	// EvictionMonitoringInterval between measurements (default 10s).
	EvictionMonitoringInterval time.Duration
	// Reclaimer frees disk before pods are evicted for a disk signal
	// (default: this node's image garbage collection).
	Reclaimer eviction.Reclaimer
	// KubeletVersion is reported in node info.
	KubeletVersion string
	Workers        int
	Logger         *slog.Logger
}

func (o *Options) validate() error {
	var errs []error
	if o.Client == nil {
		errs = append(errs, errors.New("a client is required"))
	}
	if o.NodeName == "" {
		errs = append(errs, errors.New("the node name is empty"))
	}
	if o.NodeIP == "" {
		errs = append(errs, errors.New("the node IP is empty"))
	}
	if !filepath.IsAbs(o.DataDir) {
		errs = append(errs, fmt.Errorf("data directory %q must be an absolute path", o.DataDir))
	}
	if o.ClientCA == nil || len(o.APIClientUsers) == 0 {
		errs = append(errs, errors.New("the node API needs a client CA and the API server's client user"))
	}
	if len(o.Serving.Certificate) == 0 {
		errs = append(errs, errors.New("the node API needs a serving certificate"))
	}
	if o.ImageGC == (imagegc.Policy{}) {
		o.ImageGC = imagegc.DefaultPolicy()
	}
	if err := o.ImageGC.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.ImageFSPath != "" && !filepath.IsAbs(o.ImageFSPath) {
		errs = append(errs, fmt.Errorf("image file system path %q must be absolute", o.ImageFSPath))
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if len(errs) > 0 {
		return fmt.Errorf("nodeagent: %w", errors.Join(errs...))
	}
	return nil
}

// clientObjects reads ConfigMaps and Secrets for pods through the API, and
// requests their service account tokens.
type clientObjects struct{ c kubernetes.Interface }

func (o clientObjects) CreateToken(ctx context.Context, ns, sa string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	return o.c.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, tr, metav1.CreateOptions{})
}

func (o clientObjects) GetConfigMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	return o.c.CoreV1().ConfigMaps(ns).Get(ctx, name, getOptions)
}

func (o clientObjects) GetSecret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	return o.c.CoreV1().Secrets(ns).Get(ctx, name, getOptions)
}
