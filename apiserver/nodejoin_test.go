package apiserver_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/skiffkube/skiff/apiserver"
	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/apiserver/nodejoin"
	"github.com/skiffkube/skiff/apiserver/pki"
)

// TestNodeJoin: the cluster token buys a node its own certificate for a
// key it keeps; the node then works as itself, renews with that
// certificate, and cannot get one for another node.
func TestNodeJoin(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	caOnly := &tls.Config{RootCAs: srv.Bundle.CAPool(), MinVersion: tls.VersionTLS12}
	csr, key, err := pki.NewClientCSR("system:node:j1", []string{"system:nodes"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&nodejoin.Client{Server: srv.URL, TLS: caOnly, Token: apiservertest.AdminToken}).Request(ctx, "j1", csr)
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	block, _ := pem.Decode(resp.Certificate)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || cert.Subject.CommonName != "system:node:j1" || strings.Join(cert.Subject.Organization, ",") != "system:nodes" {
		t.Fatalf("certificate %+v, %v", cert.Subject, err)
	}
	if string(resp.CA) != string(srv.Bundle.CAPEM) {
		t.Error("join did not return the cluster CA")
	}

	nodeCfg := rest.AnonymousClientConfig(srv.Config)
	nodeCfg.CertData, nodeCfg.KeyData = resp.Certificate, key
	nc := clientsetFor(t, nodeCfg)
	if _, err := nc.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "j1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("node registers itself: %v", err)
	}
	if _, err := nc.CoreV1().Nodes().Get(ctx, "j1", metav1.GetOptions{}); err != nil {
		t.Fatalf("node reads itself: %v", err)
	}

	pair, err := tls.X509KeyPair(resp.Certificate, key)
	if err != nil {
		t.Fatal(err)
	}
	asNode := &tls.Config{RootCAs: srv.Bundle.CAPool(), Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	csr2, _, _ := pki.NewClientCSR("system:node:j1", []string{"system:nodes"})
	if _, err := (&nodejoin.Client{Server: srv.URL, TLS: asNode}).Request(ctx, "j1", csr2); err != nil {
		t.Errorf("node renews its own certificate: %v", err)
	}
	other, _, _ := pki.NewClientCSR("system:node:j2", []string{"system:nodes"})
	if _, err := (&nodejoin.Client{Server: srv.URL, TLS: asNode}).Request(ctx, "j2", other); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("node j1 asking for j2's certificate: %v, want 403", err)
	}
	if _, err := (&nodejoin.Client{Server: srv.URL, TLS: caOnly, Token: apiservertest.AdminToken}).Request(ctx, "j2", csr2); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("a request whose CSR names another node: %v, want 400", err)
	}
	if _, err := (&nodejoin.Client{Server: srv.URL, TLS: caOnly}).Request(ctx, "j1", csr2); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("anonymous join: %v, want 401", err)
	}
	alice := srv.UserConfig(t, "alice")
	alicePair, _ := tls.X509KeyPair(alice.CertData, alice.KeyData)
	aliceTLS := &tls.Config{RootCAs: srv.Bundle.CAPool(), Certificates: []tls.Certificate{alicePair}, MinVersion: tls.VersionTLS12}
	if _, err := (&nodejoin.Client{Server: srv.URL, TLS: aliceTLS}).Request(ctx, "j3", other); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("an ordinary user asking for node credentials: %v, want 403", err)
	}
}

// TestNodeServingCertificateCannotImpersonateTheAPIServer: a node may
// write any address into its own Node status, and gets a serving
// certificate for what its Node reports. That certificate must not be
// one clients accept as the API server's: whatever names and addresses it
// carries (loopback, the API server's names, the kubernetes Service's
// ClusterIP), it does not verify against the cluster CA that kubeconfigs
// and pods trust, only against the CA the API server trusts for node APIs.
func TestNodeServingCertificateCannotImpersonateTheAPIServer(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	admin := clientsetFor(t, srv.Config)
	var clusterIP string
	deadline := time.Now().Add(30 * time.Second)
	for clusterIP == "" {
		if svc, err := admin.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err == nil {
			clusterIP = svc.Spec.ClusterIP
		} else if time.Now().After(deadline) {
			t.Fatalf("the kubernetes Service: %v", err)
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
	// Everything the API server's own certificate names, and more.
	hosts := []string{"evil", "127.0.0.1", "localhost", "kubernetes", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", clusterIP}
	hosts = append(hosts, srv.Bundle.Serving.Leaf.DNSNames...)
	for _, ip := range srv.Bundle.Serving.Leaf.IPAddresses {
		hosts = append(hosts, ip.String())
	}

	certPEM, keyPEM, err := srv.Bundle.IssueClientCert("system:node:evil", []string{"system:nodes"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	nodeCfg := rest.AnonymousClientConfig(srv.Config)
	nodeCfg.CertData, nodeCfg.KeyData = certPEM, keyPEM
	asNode := clientsetFor(t, nodeCfg)
	n, err := asNode.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "evil"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("node registers itself: %v", err)
	}
	for _, h := range hosts {
		typ := corev1.NodeInternalDNS
		if net.ParseIP(h) != nil {
			typ = corev1.NodeInternalIP
		}
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: typ, Address: h})
	}
	if _, err := asNode.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("node reports its addresses: %v", err)
	}

	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	csr, _, err := pki.NewServingCSR("system:node:evil", []string{"system:nodes"}, hosts)
	if err != nil {
		t.Fatal(err)
	}
	c := &nodejoin.Client{Server: srv.URL, TLS: &tls.Config{RootCAs: srv.Bundle.CAPool(), Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}}
	resp, err := c.Send(ctx, nodejoin.Request{NodeName: "evil", CSR: csr, Usage: nodejoin.UsageServing})
	if err != nil {
		t.Fatalf("node asks for a serving certificate for what its Node reports: %v", err)
	}
	block, _ := pem.Decode(resp.Certificate)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	clientRoots := x509.NewCertPool()
	clientRoots.AppendCertsFromPEM(srv.Bundle.CAPEM)
	nodeRoots := x509.NewCertPool()
	if !nodeRoots.AppendCertsFromPEM(resp.CA) {
		t.Fatal("the response carries no CA")
	}
	for _, h := range hosts {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: clientRoots, DNSName: h, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
			t.Errorf("a node's serving certificate verifies as %s against the cluster CA clients trust", h)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: nodeRoots, DNSName: h, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("the serving certificate does not verify as %s against the CA the response names: %v", h, err)
		}
	}
}

// TestAgentTokenMayOnlyJoin: the agent join token (skiff server's
// --agent-token, system:bootstrap:skiff-agent in system:bootstrappers) buys
// a node client certificate, as Kubernetes' bootstrap tokens get node
// client CSRs approved; it is refused a serving certificate, which only
// the node itself may obtain, and everything the default policy does not
// give every authenticated user: no pods, no secrets, no /metrics.
func TestAgentTokenMayOnlyJoin(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	caOnly := &tls.Config{RootCAs: srv.Bundle.CAPool(), MinVersion: tls.VersionTLS12}
	agent := &nodejoin.Client{Server: srv.URL, TLS: caOnly, Token: apiservertest.AgentToken}

	csr, key, err := pki.NewClientCSR("system:node:b1", []string{"system:nodes"})
	if err != nil {
		t.Fatal(err)
	}
	// The default binding reaches the RBAC authorizer's cache by a watch.
	var resp *nodejoin.Response
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err = agent.Request(ctx, "b1", csr); err == nil || !strings.Contains(err.Error(), "403") || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("join with the agent token: %v", err)
	}
	block, _ := pem.Decode(resp.Certificate)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || cert.Subject.CommonName != "system:node:b1" || strings.Join(cert.Subject.Organization, ",") != "system:nodes" {
		t.Fatalf("certificate %+v, %v", cert.Subject, err)
	}
	nodeCfg := rest.AnonymousClientConfig(srv.Config)
	nodeCfg.CertData, nodeCfg.KeyData = resp.Certificate, key
	if _, err := clientsetFor(t, nodeCfg).CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b1"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.7"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the joined node registers itself: %v", err)
	}

	// A serving certificate for the registered node, for the address it
	// reports: the node gets one, the agent token does not.
	servingCSR, _, err := pki.NewServingCSR("system:node:b1", []string{"system:nodes"}, []string{"b1", "10.0.0.7"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = agent.Send(ctx, nodejoin.Request{NodeName: "b1", CSR: servingCSR, Usage: nodejoin.UsageServing})
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "issued only to node") {
		t.Errorf("the agent token asking for a serving certificate: %v, want 403", err)
	}
	pair, err := tls.X509KeyPair(resp.Certificate, key)
	if err != nil {
		t.Fatal(err)
	}
	asNode := &nodejoin.Client{Server: srv.URL, TLS: &tls.Config{RootCAs: srv.Bundle.CAPool(), Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}}
	if _, err := asNode.Send(ctx, nodejoin.Request{NodeName: "b1", CSR: servingCSR, Usage: nodejoin.UsageServing}); err != nil {
		t.Errorf("the node itself asking for its serving certificate: %v", err)
	}

	tokenCfg := rest.AnonymousClientConfig(srv.Config)
	tokenCfg.BearerToken = apiservertest.AgentToken
	cs := clientsetFor(t, tokenCfg)
	if _, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the agent token lists pods: %v, want Forbidden", err)
	}
	if _, err := cs.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the agent token lists secrets: %v, want Forbidden", err)
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b2"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the agent token creates a node: %v, want Forbidden", err)
	}
	for _, path := range []string{"/metrics", "/debug/pprof/"} {
		if err := cs.RESTClient().Get().AbsPath(path).Do(ctx).Error(); !apierrors.IsForbidden(err) {
			t.Errorf("the agent token gets %s: %v, want Forbidden", path, err)
		}
	}
	if err := cs.RESTClient().Get().AbsPath(nodejoin.Path).Do(ctx).Error(); !apierrors.IsForbidden(err) {
		t.Errorf("the agent token gets %s: %v, want Forbidden (post only)", nodejoin.Path, err)
	}

	// What `kubectl auth can-i` asks, with the token itself.
	for _, c := range []struct {
		attrs authorizationv1.SelfSubjectAccessReviewSpec
		want  bool
	}{
		{authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: nodejoin.Path, Verb: "post"}}, true},
		{authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}, false},
		{authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods"}}, false},
		{authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}}, false},
	} {
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: c.attrs}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SelfSubjectAccessReview %+v: %v", c.attrs, err)
		}
		if r.Status.Allowed != c.want {
			t.Errorf("can-i %+v %+v = %v, want %v", c.attrs.NonResourceAttributes, c.attrs.ResourceAttributes, r.Status.Allowed, c.want)
		}
	}
	who, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := who.Status.UserInfo; u.Username != "system:bootstrap:skiff-agent" || strings.Join(u.Groups, ",") != "system:bootstrappers,system:authenticated" {
		t.Errorf("the agent token is %q in %v", u.Username, u.Groups)
	}
}

// TestJoiningWithTheAdminTokenIsReported: agents that join with the
// cluster token (system:masters) still get their certificate, so existing
// join scripts keep working, and the server logs that they should use the
// agent token; joining with the agent token logs nothing of the sort.
func TestJoiningWithTheAdminTokenIsReported(t *testing.T) {
	var logged syncBuffer
	srv := apiservertest.StartWrapped(t, nil, func(c *apiserver.Config) { c.Logger = slog.New(slog.NewTextHandler(&logged, nil)) })
	ctx := context.Background()
	caOnly := &tls.Config{RootCAs: srv.Bundle.CAPool(), MinVersion: tls.VersionTLS12}
	csr, _, err := pki.NewClientCSR("system:node:w1", []string{"system:nodes"})
	if err != nil {
		t.Fatal(err)
	}
	agent := &nodejoin.Client{Server: srv.URL, TLS: caOnly, Token: apiservertest.AgentToken}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err = agent.Request(ctx, "w1", csr); err == nil || !strings.Contains(err.Error(), "403") || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("join with the agent token: %v", err)
	}
	if strings.Contains(logged.String(), "agent-token") {
		t.Errorf("joining with the agent token logged a warning:\n%s", logged.String())
	}
	if _, err := (&nodejoin.Client{Server: srv.URL, TLS: caOnly, Token: apiservertest.AdminToken}).Request(ctx, "w1", csr); err != nil {
		t.Fatalf("join with the admin token: %v", err)
	}
	out := logged.String()
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "<data-dir>/agent-token") || !strings.Contains(out, "user=admin") || !strings.Contains(out, "node=w1") {
		t.Errorf("no warning naming the agent token after a join with the admin token:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer the server's goroutines may log to.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
