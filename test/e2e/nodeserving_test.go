package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffkube/skiff/apiserver/authz/bootstrap"
	"github.com/skiffkube/skiff/apiserver/nodejoin"
	"github.com/skiffkube/skiff/apiserver/pki"
	"github.com/skiffkube/skiff/kubelet/nodetest"
	"github.com/skiffkube/skiff/kubelet/testimage"
)

// A containerd node that joins with `skiff agent --server --token` and the
// agent token (no --tls-cert-file) obtains a serving certificate for its
// node API from the API server, signed by the node CA, so kubectl logs and exec reach its
// pods through the API server. The server issues one only to the node
// itself and only for its own name and addresses; as a node writes those
// itself (here 127.0.0.1, where the API server also listens), the
// certificate does not verify against the cluster CA that kubectl trusts
// for the API server.
func TestJoinedAgentGetsAServingCertificate(t *testing.T) {
	nodetest.RequireContainerd(t)
	s := startServer(t) // --disable-agent
	k := newKubectl(t, s, 33)
	caFile := filepath.Join(s.dataDir, "tls", pki.CACertFile)
	dir, certDir := t.TempDir(), t.TempDir()
	images := filepath.Join(dir, "agent", "images")
	if err := os.MkdirAll(images, 0o755); err != nil {
		t.Fatal(err)
	}
	testimage.Build(t, images)
	runAgent(t, 20*time.Second, "--runtime", "containerd", "--server", s.url, "--token", agentToken(t, s),
		"--certificate-authority", caFile, "--cert-dir", certDir, "--node-name", "joined",
		"--data-dir", dir, "--node-ip", "127.0.0.1", "--node-api-address", "127.0.0.1", "--node-api-port", fmt.Sprint(freePort(t)))
	t.Cleanup(func() {
		if out, err := k.run("", "delete", "pods", "--all", "--grace-period=1", "--timeout=60s"); err != nil {
			t.Logf("cleaning up: %v\n%s", err, out)
		}
	})
	waitFor(t, k, 60*time.Second, "joined node Ready", func(out string) bool { return out == "True" },
		"get", "node", "joined", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
	k.okIn(podManifest("solo", `  nodeName: joined
  containers:
  - name: app
    image: `+testimage.Ref+`
    args: ["serve", ":8080"]
`), "apply", "-f", "-")
	waitFor(t, k, 60*time.Second, "solo running", func(out string) bool { return out == "Running" },
		"get", "pod", "solo", "-o", "jsonpath={.status.phase}")

	// Through the API server, which verifies the node's certificate
	// against the node CA and the node's InternalIP.
	waitFor(t, k, 30*time.Second, "kubectl logs through the API server", func(out string) bool { return strings.Contains(out, "serving on :8080") },
		"logs", "solo")
	contains(t, "kubectl exec", k.ok("exec", "solo", "--", "/app", "echo", "exec", "on", "a", "joined", "node"), "exec on a joined node")

	// What the agent keeps: a serving certificate from the node CA for
	// the node's name and address, with its own key.
	pair, err := tls.LoadX509KeyPair(filepath.Join(certDir, "serving.crt"), filepath.Join(certDir, "serving.key"))
	if err != nil {
		t.Fatalf("no serving certificate stored in --cert-dir: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	nodeCAPEM, err := os.ReadFile(filepath.Join(s.dataDir, "tls", pki.NodeCACertFile))
	if err != nil {
		t.Fatal(err)
	}
	nodeRoots := x509.NewCertPool()
	nodeRoots.AppendCertsFromPEM(nodeCAPEM)
	for _, host := range []string{"joined", "127.0.0.1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: nodeRoots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("the stored serving certificate does not verify for %s against the node CA: %v", host, err)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
			t.Errorf("the node's serving certificate verifies for %s against the cluster CA, as if it were the API server", host)
		}
	}

	// Node identity: with its own client certificate the node gets nothing
	// for addresses its Node does not report, nor for another node; the
	// cluster token (the admin) gets no node serving certificate either.
	client, err := tls.LoadX509KeyPair(filepath.Join(certDir, "node.crt"), filepath.Join(certDir, "node.key"))
	if err != nil {
		t.Fatal(err)
	}
	ask := func(c *nodejoin.Client, node string, hosts ...string) error {
		csr, _, err := pki.NewServingCSR(bootstrap.NodeUserPrefix+node, []string{bootstrap.NodesGroup}, hosts)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = c.Send(ctx, nodejoin.Request{NodeName: node, CSR: csr, Usage: nodejoin.UsageServing})
		return err
	}
	asNode := &nodejoin.Client{Server: s.url, TLS: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{client}}}
	adminToken, err := os.ReadFile(filepath.Join(s.dataDir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	asAdmin := &nodejoin.Client{Server: s.url, TLS: &tls.Config{RootCAs: roots}, Token: strings.TrimSpace(string(adminToken))}
	asAgent := &nodejoin.Client{Server: s.url, TLS: &tls.Config{RootCAs: roots}, Token: agentToken(t, s)}
	if err := ask(asNode, "joined", "joined", "127.0.0.1"); err != nil {
		t.Errorf("the node asking for its own name and address: %v", err)
	}
	for _, tc := range []struct {
		what   string
		client *nodejoin.Client
		node   string
		hosts  []string
		want   string
	}{
		{"an address the node does not report", asNode, "joined", []string{"joined", "192.0.2.7"}, "403"},
		{"a name the node does not have", asNode, "joined", []string{"api.example.test"}, "403"},
		{"another node", asNode, "other", []string{"other"}, "403"},
		{"the admin's token", asAdmin, "joined", []string{"joined", "127.0.0.1"}, "403"},
		{"the agent token", asAgent, "joined", []string{"joined", "127.0.0.1"}, "403"},
	} {
		err := ask(tc.client, tc.node, tc.hosts...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serving certificate for %s: error %v, want %s", tc.what, err, tc.want)
		}
	}
}
