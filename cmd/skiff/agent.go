package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiffkube/skiff/apiserver/authz/node"
	"github.com/skiffkube/skiff/config"
	"github.com/skiffkube/skiff/kubelet/eviction"
	"github.com/skiffkube/skiff/kubelet/imagegc"
)

// agentOptions are the flags of `skiff agent`.
type agentOptions struct {
	kubeconfig string
	server     string
	token      string
	caFile     string
	certDir    string
	nodeName   string
	runtime    string
	count      int
	labels     []string
	capacity   string
	stopDelay  time.Duration
	nodeIP     string
	workers    int

	capacitySet      bool
	dataDir          string
	containerdSocket string
	nodeAPIAddress   string
	nodeAPIPort      int
	tlsCert, tlsKey  string
	imageGC          imagegc.Policy
	imageFSPath      string

	evictionHard       string
	evictionTransition time.Duration

	// creds is set once a single node has joined with --server/--token:
	// its node API then gets a serving certificate the same way.
	creds *nodeCredentials
}

func newAgentCommand() *cobra.Command {
	o := &agentOptions{}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run a node agent: register a node and run the pods bound to it",
		Long: `Run a node agent against a skiff (or any Kubernetes) API server.

With --runtime containerd (the default) it is a real node: once node IPAM
has given it a pod CIDR it runs its pods' containers on containerd, each pod
in its own network namespace on the node bridge, and serves the node API
(logs, exec, port-forward) that only the API server's client certificate
may call. Until containerd answers the node reports Ready=False and why.

With --runtime fake it is a hollow node, as Kubernetes' kubemark: the node
registers, heartbeats, reports its pods Running and Ready and records their
Events (Pulled, Created, Started, Killing) without running containers.
--count N runs N hollow nodes in one process, named <node-name>-0 …
<node-name>-N-1, each a kubelet of its own: with --server and --token each
joins separately and acts as system:node:<name> with its own certificate
(in <cert-dir>/<name>), and each watches only its own pods. With an admin
--kubeconfig they share its identity, a convenience for tests.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			o.capacitySet = cmd.Flags().Changed("capacity")
			return runAgent(ctx, o, slog.Default())
		},
	}
	f := cmd.Flags()
	host, _ := os.Hostname()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file with the API server and credentials")
	f.StringVar(&o.server, "server", "", "API server URL (with --token and --certificate-authority, instead of --kubeconfig)")
	f.StringVar(&o.token, "token", "", "agent join token for --server, the server's <data-dir>/agent-token (--agent-token): each node joins with it once and then uses its own certificate (kept in --cert-dir). The server's cluster token (<data-dir>/token) works too but is the admin's: do not copy it to nodes")
	f.StringVar(&o.certDir, "cert-dir", "", "where a joined node keeps its certificate; with --count > 1 each hollow node in <cert-dir>/<its name> (default <data dir>/agent/<node name>: /var/lib/skiff as root, ~/.skiff otherwise)")
	f.StringVar(&o.caFile, "certificate-authority", "", "CA certificate file that signed --server's certificate")
	f.StringVar(&o.nodeName, "node-name", strings.ToLower(host), "node name (with --count, the prefix of the names)")
	f.StringVar(&o.runtime, "runtime", "containerd", "container runtime: containerd (a real node) or fake (hollow node)")
	f.IntVar(&o.count, "count", 1, "number of hollow nodes to run (--runtime fake only)")
	f.StringArrayVar(&o.labels, "node-label", nil, "label key=value for the node(s); repeatable")
	f.StringVar(&o.capacity, "capacity", "cpu=4,memory=8Gi,pods=110,ephemeral-storage=100Gi", "node capacity as name=quantity pairs (containerd nodes detect theirs unless this is given)")
	f.DurationVar(&o.stopDelay, "fake-stop-delay", 0, "how long hollow containers take to stop (capped by the pod's grace period)")
	f.StringVar(&o.nodeIP, "node-ip", "", "node InternalIP to report (default: the first non-loopback address)")
	f.IntVar(&o.workers, "workers", 2, "pod sync workers per node")
	f.StringVar(&o.dataDir, "data-dir", "", "directory for the agent's state (<data-dir>/agent) and image archives (<data-dir>/agent/images); default /var/lib/skiff as root")
	f.StringVar(&o.containerdSocket, "containerd-socket", config.DefaultContainerdSocket, "containerd's socket (--runtime containerd)")
	f.StringVar(&o.nodeAPIAddress, "node-api-address", "0.0.0.0", "IP address the node API listens on (--runtime containerd)")
	f.IntVar(&o.nodeAPIPort, "node-api-port", config.DefaultNodeAPIPort, "TCP port of the node API (--runtime containerd)")
	f.StringVar(&o.tlsCert, "tls-cert-file", "", "node API serving certificate signed by the cluster CA (default: a node joined with --server/--token obtains one from the API server and keeps it renewed in --cert-dir; with --kubeconfig, self-signed, which the API server does not trust)")
	f.StringVar(&o.tlsKey, "tls-private-key-file", "", "key of --tls-cert-file")
	f.IntVar(&o.imageGC.HighThresholdPercent, "image-gc-high-threshold", imagegc.DefaultHighThresholdPercent, "percent of the image file system used above which unused images are removed, least recently used first; 100 disables it (--runtime containerd)")
	f.IntVar(&o.imageGC.LowThresholdPercent, "image-gc-low-threshold", imagegc.DefaultLowThresholdPercent, "percent of the image file system used that image garbage collection frees down to (--runtime containerd)")
	f.DurationVar(&o.imageGC.MinAge, "image-minimum-gc-age", imagegc.DefaultMinAge, "minimum age of an image (since the agent first saw it) before it may be removed (--runtime containerd)")
	f.StringVar(&o.imageFSPath, "image-fs-path", "", "a path on the file system holding images, measured for image garbage collection (default: containerd's snapshotter root, as containerd reports it)")
	f.StringVar(&o.evictionHard, "eviction-hard", eviction.DefaultEvictionHard, "hard eviction thresholds, as the kubelet's: signal<quantity or signal<percentage, comma-separated (memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available); empty disables eviction (--runtime containerd)")
	f.DurationVar(&o.evictionTransition, "eviction-pressure-transition-period", eviction.DefaultPressureTransitionPeriod, "how long a pressure condition stays True after its signal went back above the threshold (--runtime containerd)")
	return cmd
}

func (o *agentOptions) restConfig() (*rest.Config, error) {
	switch {
	case o.kubeconfig != "" && o.server != "":
		return nil, fmt.Errorf("invalid flags: give either --kubeconfig or --server, not both")
	case o.kubeconfig != "":
		cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("invalid --kubeconfig %q: %w", o.kubeconfig, err)
		}
		return cfg, nil
	case o.server != "":
		if o.token == "" || o.caFile == "" {
			return nil, fmt.Errorf("invalid flags: --server needs --token and --certificate-authority")
		}
		if _, err := os.Stat(o.caFile); err != nil {
			return nil, fmt.Errorf("invalid --certificate-authority %q: %w", o.caFile, err)
		}
		return &rest.Config{Host: o.server, BearerToken: o.token, TLSClientConfig: rest.TLSClientConfig{CAFile: o.caFile}}, nil
	}
	return nil, fmt.Errorf("invalid flags: --kubeconfig or --server is required")
}

// joinedConfig gives a single node its own identity: it joins with the
// token (or reuses its stored certificate) and keeps the certificate
// renewed for as long as ctx lives.
func (o *agentOptions) joinedConfig(ctx context.Context, log *slog.Logger) (*rest.Config, error) {
	caPEM, err := o.joinCA()
	if err != nil {
		return nil, err
	}
	dir := o.certDir
	if dir == "" {
		base, err := defaultAgentDir()
		if err != nil {
			return nil, err
		}
		dir = filepath.Join(base, o.nodeName)
	}
	return o.joined(ctx, o.nodeName, dir, caPEM, log)
}

// joinCA checks the join flags and reads the cluster CA.
func (o *agentOptions) joinCA() ([]byte, error) {
	if o.kubeconfig != "" {
		return nil, fmt.Errorf("invalid flags: give either --kubeconfig or --server, not both")
	}
	if o.caFile == "" {
		return nil, fmt.Errorf("invalid flags: --server needs --certificate-authority")
	}
	caPEM, err := os.ReadFile(o.caFile)
	if err != nil {
		return nil, fmt.Errorf("invalid --certificate-authority %q: %w", o.caFile, err)
	}
	return caPEM, nil
}

// defaultAgentDir is where node certificates are kept without --cert-dir:
// <data dir>/agent (/var/lib/skiff as root, ~/.skiff otherwise).
func defaultAgentDir() (string, error) {
	base := "/var/lib/skiff"
	if os.Geteuid() != 0 {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("invalid --cert-dir: required when there is no home directory")
		}
		base = filepath.Join(home, ".skiff")
	}
	return filepath.Join(base, "agent"), nil
}

// joined makes sure node name has its certificate in dir (joining with the
// token if it has none) and renews it while ctx lives.
func (o *agentOptions) joined(ctx context.Context, name, dir string, caPEM []byte, log *slog.Logger) (*rest.Config, error) {
	creds := &nodeCredentials{dir: dir, server: o.server, nodeName: name, caPEM: caPEM, log: log}
	if err := creds.ensure(ctx, o.token); err != nil {
		return nil, err
	}
	go creds.renewLoop(ctx)
	o.creds = creds
	return creds.restConfig(), nil
}

func parseCapacity(s string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, pair := range strings.Split(s, ",") {
		name, qty, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("invalid --capacity %q: want name=quantity pairs such as cpu=4,memory=8Gi", s)
		}
		q, err := resource.ParseQuantity(qty)
		if err != nil {
			return nil, fmt.Errorf("invalid --capacity %q: %s: %w", s, name, err)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

func parseLabels(in []string) (map[string]string, error) {
	out := map[string]string{}
	for _, l := range in {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("invalid --node-label %q: want key=value", l)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("invalid --node-label %q: key: %s", l, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("invalid --node-label %q: value: %s", l, strings.Join(errs, "; "))
		}
		// As the kubelet's --node-labels: the API server refuses these
		// from a node's own credential (NodeRestriction), so the agent
		// could not register; an administrator sets them with kubectl.
		if node.ReservedLabel(k) {
			return nil, fmt.Errorf("invalid --node-label %q: a node may not set labels under kubernetes.io or k8s.io other than the kubelet's own (hostname, topology, instance type, os, arch) and the kubelet.kubernetes.io and node.kubernetes.io prefixes, nor node-restriction.kubernetes.io ones; set it with kubectl label node", l)
		}
		out[k] = v
	}
	return out, nil
}

func defaultNodeIP() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return "127.0.0.1"
}

func runAgent(ctx context.Context, o *agentOptions, log *slog.Logger) error {
	if o.runtime != "fake" && o.runtime != "containerd" {
		return fmt.Errorf("invalid --runtime %q: must be containerd or fake", o.runtime)
	}
	if o.count < 1 {
		return fmt.Errorf("invalid --count %d: must be at least 1", o.count)
	}
	if o.nodeName == "" {
		return fmt.Errorf("invalid --node-name: empty")
	}
	capacity, err := parseCapacity(o.capacity)
	if err != nil {
		return err
	}
	labels, err := parseLabels(o.labels)
	if err != nil {
		return err
	}
	// Checked for every runtime; only a containerd node measures and evicts
	// (hollow nodes report no pressure).
	if _, err := eviction.ParseThresholds("eviction-hard", o.evictionHard); err != nil {
		return err
	}
	if o.runtime == "fake" {
		return runHollowNodes(ctx, o, capacity, labels, log)
	}
	var rc *rest.Config
	if o.server != "" {
		rc, err = o.joinedConfig(ctx, log)
	} else {
		rc, err = o.restConfig()
	}
	if err != nil {
		return err
	}
	return runContainerdAgent(ctx, o, rc, log)
}
