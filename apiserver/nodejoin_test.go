package apiserver_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

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
