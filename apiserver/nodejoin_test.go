package apiserver_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

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
