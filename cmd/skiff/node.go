package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiffkube/skiff/apiserver"
	"github.com/skiffkube/skiff/apiserver/pki"
	"github.com/skiffkube/skiff/config"
	"github.com/skiffkube/skiff/kubelet/eviction"
	"github.com/skiffkube/skiff/kubelet/imagegc"
	"github.com/skiffkube/skiff/kubelet/logdriver"
	"github.com/skiffkube/skiff/kubelet/nodeagent"
	"github.com/skiffkube/skiff/kubelet/nodeapi"
)

// newLogDriverCommand is the hidden `skiff log-driver <path>` that the
// containerd shim runs beside each container to write its CRI log (see
// kubelet/logdriver); the agent hands containerd the skiff binary's path.
func newLogDriverCommand() *cobra.Command {
	return &cobra.Command{
		Use:    logdriver.Command + " PATH",
		Short:  "Write a container's output as a CRI log (run by the containerd shim)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return logdriver.Main([]string{logdriver.Command, args[0]})
		},
	}
}

// nodeAPIClientTLS is the API server's side of the node API: a client
// certificate nodes admit, and the node CA (and the cluster CA, which
// signed node certificates before) for the nodes' certificates.
func nodeAPIClientTLS(b *pki.Bundle) (*tls.Config, error) {
	certPEM, keyPEM, err := b.IssueClientCert(nodeapi.APIServerClientUser, nil, pki.LeafValidity)
	if err != nil {
		return nil, err
	}
	return b.NodeAPIClientTLSConfig(certPEM, keyPEM)
}

// embeddedNodeIP is --node-ip, else --bind-address when it names one
// address, else the host's first non-loopback IPv4 address.
func embeddedNodeIP(cfg *config.Server) string {
	if cfg.NodeIP != "" {
		return cfg.NodeIP
	}
	if a, err := netip.ParseAddr(cfg.BindAddress); err == nil && !a.IsUnspecified() {
		return a.String()
	}
	return defaultNodeIP()
}

func hostNodeName() string {
	host, _ := os.Hostname()
	return strings.ToLower(host)
}

// runEmbeddedAgent runs the server's own node: containerd, pod network and
// a node API whose certificate the node CA signs.
func runEmbeddedAgent(ctx context.Context, cfg *config.Server, url string, bundle *pki.Bundle, log *slog.Logger) error {
	name := cfg.NodeName
	if name == "" {
		name = hostNodeName()
	}
	// The embedded agent acts as its node (system:node:<name> in
	// system:nodes), which the node authorizer confines to that node.
	certPEM, keyPEM, err := bundle.IssueClientCert("system:node:"+name, []string{"system:nodes"}, pki.LeafValidity)
	if err != nil {
		return fmt.Errorf("node client certificate: %w", err)
	}
	rc := bundle.AdminRESTConfig(url)
	rc.TLSClientConfig.CertData, rc.TLSClientConfig.KeyData = certPEM, keyPEM
	ip := embeddedNodeIP(cfg)
	serving, err := bundle.IssueServingCert(name, []string{ip, name}, pki.LeafValidity)
	if err != nil {
		return fmt.Errorf("node API certificate: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the skiff binary for the container log driver: %w", err)
	}
	client, err := agentClient(rc)
	if err != nil {
		return err
	}
	return nodeagent.Run(ctx, nodeagent.Options{
		Client: client, NodeName: name, NodeIP: ip, DataDir: cfg.DataDir,
		ContainerdSocket: cfg.ContainerdSocket, LogDriver: exe,
		ImageGC: imagegc.Policy{HighThresholdPercent: cfg.ImageGCHighThreshold, LowThresholdPercent: cfg.ImageGCLowThreshold,
			MinAge: cfg.ImageMinimumGCAge},
		APIAddress: net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.NodeAPIPort)),
		Serving:    serving, ClientCA: bundle.CAPool(), APIClientUsers: []string{nodeapi.APIServerClientUser},
		EvictionHard: cfg.EvictionHard, EvictionPressureTransitionPeriod: cfg.EvictionPressureTransitionPeriod,
		KubeletVersion: apiserver.KubernetesVersion, Logger: log.With("component", "agent"),
	})
}

func agentClient(rc *rest.Config) (*kubernetes.Clientset, error) {
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = 50, 100
	preferProtobuf(rc)
	return kubernetes.NewForConfig(rc)
}

// runContainerdAgent is `skiff agent --runtime containerd`: a real node
// against a remote API server.
func runContainerdAgent(ctx context.Context, o *agentOptions, rc *rest.Config, log *slog.Logger) error {
	if o.count != 1 {
		return fmt.Errorf("invalid --count %d: a containerd node runs alone (--count is for hollow nodes)", o.count)
	}
	if _, err := netip.ParseAddr(o.nodeAPIAddress); err != nil {
		return fmt.Errorf("invalid --node-api-address %q: must be an IP address", o.nodeAPIAddress)
	}
	if o.nodeAPIPort < 1 || o.nodeAPIPort > 65535 {
		return fmt.Errorf("invalid --node-api-port %d: must be 1-65535", o.nodeAPIPort)
	}
	if err := o.imageGC.Validate(); err != nil {
		return fmt.Errorf("invalid flags: %w", err)
	}
	if o.imageFSPath != "" && !filepath.IsAbs(o.imageFSPath) {
		return fmt.Errorf("invalid --image-fs-path %q: must be an absolute path", o.imageFSPath)
	}
	clientCA, err := clusterCA(rc)
	if err != nil {
		return err
	}
	ip := o.nodeIP
	if ip == "" {
		ip = defaultNodeIP()
	}
	var serving tls.Certificate
	var getServing func() *tls.Certificate
	switch {
	case o.tlsCert != "" && o.tlsKey != "":
		if serving, err = tls.LoadX509KeyPair(o.tlsCert, o.tlsKey); err != nil {
			return fmt.Errorf("invalid --tls-cert-file/--tls-private-key-file: %w", err)
		}
	case o.tlsCert != "" || o.tlsKey != "":
		return fmt.Errorf("invalid flags: --tls-cert-file and --tls-private-key-file go together")
	case o.creds != nil:
		// A joined node asks the API server for a serving certificate for
		// its name and address (issued once its Node reports them) and
		// keeps it renewed; a self-signed one stands in until then.
		if serving, err = selfSigned(o.nodeName, ip); err != nil {
			return err
		}
		var current atomic.Pointer[tls.Certificate]
		go o.creds.servingLoop(ctx, []string{o.nodeName, ip}, current.Store)
		getServing = current.Load
	default:
		// The API server verifies node certificates against the cluster
		// CA: a self-signed one keeps the node running but its logs and
		// exec unreachable until a signed certificate is given.
		log.Warn("no --tls-cert-file: the node API uses a self-signed certificate, which the API server will not trust; kubectl logs/exec to this node fail until it has one signed by the cluster CA")
		if serving, err = selfSigned(o.nodeName, ip); err != nil {
			return err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the skiff binary for the container log driver: %w", err)
	}
	dataDir := o.dataDir
	if dataDir == "" {
		dataDir = config.DefaultDataDir()
	}
	client, err := agentClient(rc)
	if err != nil {
		return err
	}
	capacity, err := parseCapacity(o.capacity)
	if err != nil && o.capacitySet {
		return err
	}
	if !o.capacitySet {
		capacity = nil // detected from the machine
	}
	labels, err := parseLabels(o.labels)
	if err != nil {
		return err
	}
	evictionHard, err := eviction.ParseThresholds("eviction-hard", o.evictionHard)
	if err != nil {
		return err
	}
	if o.evictionTransition <= 0 {
		return fmt.Errorf("invalid --eviction-pressure-transition-period %s: must be a positive duration such as 5m", o.evictionTransition)
	}
	return nodeagent.Run(ctx, nodeagent.Options{
		Client: client, NodeName: o.nodeName, NodeIP: ip, DataDir: dataDir,
		ContainerdSocket: o.containerdSocket, LogDriver: exe, ImageGC: o.imageGC, ImageFSPath: o.imageFSPath,
		APIAddress: net.JoinHostPort(o.nodeAPIAddress, strconv.Itoa(o.nodeAPIPort)),
		Serving:    serving, GetServing: getServing, ClientCA: clientCA, APIClientUsers: []string{nodeapi.APIServerClientUser},
		Capacity: capacity, Labels: labels, Workers: o.workers,
		EvictionHard: evictionHard, EvictionPressureTransitionPeriod: o.evictionTransition,
		KubeletVersion: apiserver.KubernetesVersion, Logger: log.With("component", "agent"),
	})
}

// clusterCA is the CA the agent's client trusts, which also signs the API
// server's client certificate.
func clusterCA(rc *rest.Config) (*x509.CertPool, error) {
	data := rc.TLSClientConfig.CAData
	if len(data) == 0 && rc.TLSClientConfig.CAFile != "" {
		var err error
		if data, err = os.ReadFile(rc.TLSClientConfig.CAFile); err != nil {
			return nil, fmt.Errorf("reading the cluster CA: %w", err)
		}
	}
	pool := x509.NewCertPool()
	if len(data) == 0 || !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("the agent needs the cluster CA (--certificate-authority or the kubeconfig's certificate-authority-data) to admit only the API server to its node API")
	}
	return pool, nil
}

// selfSigned makes a throw-away serving certificate for the node API.
func selfSigned(name, ip string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{name},
	}
	if addr := net.ParseIP(ip); addr != nil {
		tmpl.IPAddresses = []net.IP{addr}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
