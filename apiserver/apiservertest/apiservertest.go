package apiservertest

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/apiserver"
	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/apiserver/authz/bootstrap"
	"github.com/skiffkube/skiff/apiserver/endpoints"
	"github.com/skiffkube/skiff/apiserver/pki"
	"github.com/skiffkube/skiff/controllers/serviceaccount"
	"github.com/skiffkube/skiff/storage"
	"github.com/skiffkube/skiff/storage/storagetest"
)

// AdminToken is the bearer token of the admin user in test servers.
const AdminToken = "test-admin-token"

// AgentToken is the agent join token of test servers: it authenticates as
// skiff server's --agent-token does (bootstrap.AgentJoinUser in
// bootstrap.BootstrappersGroup).
const AgentToken = "test-agent-token"

// Running is a started test server.
type Running struct {
	Server *apiserver.Server
	Store  *storage.Store
	Bundle *pki.Bundle
	URL    string
	// Config is an admin client configuration (client certificate).
	Config *rest.Config
	// Kubeconfig is the path of an admin kubeconfig file.
	Kubeconfig string
}

// Start runs a server until the test ends. mutate may adjust the store's
// configuration (for compaction tests).
func Start(t testing.TB, mutate ...func(*storage.Config)) *Running {
	t.Helper()
	return StartWrapped(t, nil, nil, mutate...)
}

// StartWrapped is Start with the API server's store wrapped by wrap (nil:
// not wrapped), for tests that change what the store answers, and its
// configuration adjusted by configure (nil: as Start).
func StartWrapped(t testing.TB, wrap func(*storage.Store) endpoints.Store, configure func(*apiserver.Config), mutate ...func(*storage.Config)) *Running {
	t.Helper()
	dir := t.TempDir()
	store := storagetest.Open(t, storagetest.SQLiteEndpoint(t), mutate...)
	var served endpoints.Store = store
	if wrap != nil {
		served = wrap(store)
	}
	bundle, err := pki.Ensure(filepath.Join(dir, "tls"), nil)
	if err != nil {
		t.Fatalf("pki.Ensure: %v", err)
	}
	// Node APIs are reached with a client certificate of the same CA,
	// trusting the node CA, as skiff server does it.
	certPEM, keyPEM, err := bundle.IssueClientCert("skiff-apiserver-kubelet-client", nil, pki.LeafValidity)
	if err != nil {
		t.Fatalf("node client certificate: %v", err)
	}
	nodeTLS, err := bundle.NodeAPIClientTLSConfig(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("node client TLS: %v", err)
	}
	cfg := apiserver.Config{
		Store: served, TLS: bundle.ServerTLSConfig(), ClientCA: bundle.CAPool(), NodeClientTLS: nodeTLS,
		Tokens: map[string]authn.User{AdminToken: {Name: "admin", Groups: []string{authn.GroupMasters}},
			AgentToken: {Name: bootstrap.AgentJoinUser, Groups: []string{bootstrap.BootstrappersGroup}}},
		BindAddress: "127.0.0.1:0", ServiceAccountKey: bundle.ServiceAccountKey,
		NodeSigner: bundle, CAPEM: bundle.CAPEM, NodeCAPEM: bundle.NodeCAPEM, Collectors: []prometheus.Collector{store},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	// Every write's object the handler keeps for its watchers must be what
	// a decoding of the stored value would give; the check runs in the
	// store's writer, so differences are gathered and reported at the end.
	var seedMu sync.Mutex
	var seedErrs []error
	cfg.CheckSeeds = func(err error) {
		seedMu.Lock()
		defer seedMu.Unlock()
		seedErrs = append(seedErrs, err)
	}
	t.Cleanup(func() { // registered first, so it runs after the server has stopped
		seedMu.Lock()
		defer seedMu.Unlock()
		for _, err := range seedErrs {
			t.Errorf("seeded watch object differs from the stored state: %v", err)
		}
	})
	if configure != nil {
		configure(&cfg)
	}
	srv, err := apiserver.New(cfg)
	if err != nil {
		t.Fatalf("apiserver.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("apiserver did not stop within 10s")
		}
	})
	select {
	case <-srv.Ready():
	case err := <-done:
		t.Fatalf("apiserver.Run: %v", err)
	}
	kc := filepath.Join(dir, "kubeconfig.yaml")
	if err := pki.WriteKubeconfig(kc, srv.URL(), bundle); err != nil {
		t.Fatalf("WriteKubeconfig: %v", err)
	}
	rc := bundle.AdminRESTConfig(srv.URL())
	rc.QPS, rc.Burst = 1000, 1000
	runServiceAccountController(t, rc)
	return &Running{Server: srv, Store: store, Bundle: bundle, URL: srv.URL(), Config: rc, Kubeconfig: kc}
}

// UserConfig is a client configuration for user in groups, with a client
// certificate from the test cluster's CA (how non-admin identities are
// made in tests).
func (r *Running) UserConfig(t testing.TB, user string, groups ...string) *rest.Config {
	t.Helper()
	certPEM, keyPEM, err := r.Bundle.IssueClientCert(user, groups, time.Hour)
	if err != nil {
		t.Fatalf("IssueClientCert: %v", err)
	}
	cfg := rest.AnonymousClientConfig(r.Config)
	cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData = certPEM, keyPEM
	cfg.QPS, cfg.Burst = 1000, 1000
	return cfg
}

// runServiceAccountController runs the real service account controller
// against the test server until the test ends, as the controller manager
// does in a cluster: pods are admitted only with an existing service
// account, and a new namespace's "default" one comes from this controller.
func runServiceAccountController(t testing.TB, rc *rest.Config) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	broadcaster := record.NewBroadcaster()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: serviceaccount.Name})
	c, err := serviceaccount.New(cs, factory.Core().V1().Namespaces(), factory.Core().V1().ServiceAccounts(), recorder,
		serviceaccount.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("service account controller: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx, 1)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		factory.Shutdown()
		broadcaster.Shutdown()
	})
}
