package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	typedcoordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/skiffkube/skiff/apiserver"
	"github.com/skiffkube/skiff/controllers/localpath"
	"github.com/skiffkube/skiff/kubelet/agent"
	"github.com/skiffkube/skiff/kubelet/fakeruntime"
)

// Hollow nodes act as kubelets do: each with the client QPS a kubelet has
// by default (kube-api-qps 50, burst 100).
const (
	hollowQPS   = 50
	hollowBurst = 100
	// joinParallelism bounds the joins (a key, a request, a signature each)
	// running at once when many hollow nodes start.
	joinParallelism = 16
)

// runHollowNodes runs --count hollow nodes (--runtime fake), each a kubelet
// of its own as in Kubernetes' kubemark: its own client, its own watch of
// its own pods, its own Event recorder. With --server and --token each node
// joins separately and acts as system:node:<name> with its own certificate
// (kept in <cert-dir>/<name> when there are several), so the node
// authorizer confines each to its own objects. With --kubeconfig they all
// share that identity — a convenience for tests.
func runHollowNodes(ctx context.Context, o *agentOptions, capacity corev1.ResourceList, labels map[string]string, log *slog.Logger) error {
	names := make([]string, o.count)
	for i := range names {
		names[i] = o.nodeName
		if o.count > 1 {
			names[i] = fmt.Sprintf("%s-%d", o.nodeName, i)
		}
	}
	clients, host, err := o.hollowClients(ctx, names, log)
	if err != nil {
		return err
	}
	ip := o.nodeIP
	if ip == "" {
		ip = defaultNodeIP()
	}
	events := agent.NewEventRecorders()
	defer events.Stop()
	agents := make([]*agent.Agent, len(names))
	for i, name := range names {
		// One recorder for the node: the agent's Events and the runtime's
		// (Killing on an image change) come from the same kubelet.
		rec := events.For(name, clients[i])
		a, err := agent.New(clients[i], fakeruntime.New(o.stopDelay, rec), agent.Config{
			NodeName: name, Capacity: capacity, Labels: labels, Logger: log, Recorder: rec,
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name}},
			NodeInfo:  agent.HollowNodeInfo(name, apiserver.KubernetesVersion),
			// Where a real agent would keep local-path volumes: the
			// provisioner serves only nodes that say.
			Annotations: map[string]string{localpath.DirAnnotation: localpath.DefaultDir},
		})
		if err != nil {
			return err
		}
		agents[i] = a
	}
	log.Info("starting hollow nodes", "nodes", len(names), "prefix", o.nodeName, "server", host)
	return agent.RunGroup(ctx, agents, o.workers)
}

// hollowClients returns a client for each node: its own, joined with the
// token (or its stored certificate), with --server; the one --kubeconfig
// identity otherwise.
func (o *agentOptions) hollowClients(ctx context.Context, names []string, log *slog.Logger) ([]agent.Client, string, error) {
	clients := make([]agent.Client, len(names))
	if o.server == "" {
		rc, err := o.restConfig()
		if err != nil {
			return nil, "", err
		}
		if len(names) > 1 {
			log.Info("hollow nodes share the --kubeconfig identity (a test convenience); with --server and --token each node joins with its own", "nodes", len(names))
		}
		// One client for all: raise client-go's default 5 QPS so a thousand
		// heartbeating nodes are not throttled into looking dead.
		rc.QPS, rc.Burst = float32(hollowQPS*len(names)), hollowBurst*len(names)
		preferProtobuf(rc)
		client, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, "", err
		}
		for i := range clients {
			clients[i] = client
		}
		return clients, rc.Host, nil
	}
	caPEM, err := o.joinCA()
	if err != nil {
		return nil, "", err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, "", fmt.Errorf("invalid --certificate-authority %q: no PEM certificate in it", o.caFile)
	}
	dirOf := func(name string) (string, error) {
		switch {
		case len(names) == 1 && o.certDir != "":
			return o.certDir, nil
		case o.certDir != "":
			return filepath.Join(o.certDir, name), nil
		}
		base, err := defaultAgentDir()
		return filepath.Join(base, name), err
	}
	var (
		wg       sync.WaitGroup
		sem      = make(chan struct{}, joinParallelism)
		mu       sync.Mutex
		firstErr error
	)
	for i, name := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			dir, err := dirOf(name)
			if err == nil {
				creds := &nodeCredentials{dir: dir, server: o.server, nodeName: name, caPEM: caPEM, log: log}
				if err = creds.ensure(ctx, o.token); err == nil {
					go creds.renewLoop(ctx)
					clients[i], err = newHollowClient(o.server, roots, creds)
				}
			}
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("hollow node %s: %w", name, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, "", firstErr
	}
	return clients, o.server, nil
}

// hollowClient is a joined hollow node's client: its own connection,
// presenting its own certificate, and only the typed clients an agent
// uses. (A whole clientset, and client-go's certificate-file reloader with
// its queue, per node would cost a thousand nodes over 50 MB more.)
type hollowClient struct {
	core  *typedcorev1.CoreV1Client
	coord *typedcoordinationv1.CoordinationV1Client
}

func (c *hollowClient) CoreV1() typedcorev1.CoreV1Interface { return c.core }
func (c *hollowClient) CoordinationV1() typedcoordinationv1.CoordinationV1Interface {
	return c.coord
}

func newHollowClient(server string, roots *x509.CertPool, creds *nodeCredentials) (*hollowClient, error) {
	tr := utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots, GetClientCertificate: creds.clientCertificate},
	})
	rc := &rest.Config{Host: server, Transport: tr, QPS: hollowQPS, Burst: hollowBurst,
		RateLimiter: flowcontrol.NewTokenBucketRateLimiter(hollowQPS, hollowBurst)}
	preferProtobuf(rc)
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, err
	}
	core, err := typedcorev1.NewForConfigAndClient(rc, hc)
	if err != nil {
		return nil, err
	}
	coord, err := typedcoordinationv1.NewForConfigAndClient(rc, hc)
	if err != nil {
		return nil, err
	}
	return &hollowClient{core: core, coord: coord}, nil
}
