package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// A stored certificate past two thirds of its life is renewed with itself
// (no token needed); a fresh one is reused as it is.
func TestNodeCredentialsRenew(t *testing.T) {
	srv := apiservertest.Start(t)
	dir := t.TempDir()
	creds := &nodeCredentials{dir: dir, server: srv.URL, nodeName: "r1", caPEM: srv.Bundle.CAPEM, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	// Ten minutes of validity (plus the CA's hour of clock-skew grace
	// before now): due for renewal, still valid to authenticate with.
	certPEM, keyPEM, err := srv.Bundle.IssueClientCert("system:node:r1", []string{"system:nodes"}, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, nodeCertFile), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, nodeKeyFile), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	expiry := func() time.Time {
		data, err := os.ReadFile(filepath.Join(dir, nodeCertFile))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := pem.Decode(data)
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c.NotAfter
	}
	before := expiry()
	if err := creds.ensure(context.Background(), ""); err != nil {
		t.Fatalf("renewal: %v", err)
	}
	renewed := expiry()
	if !renewed.After(before.Add(24 * time.Hour)) {
		t.Fatalf("certificate not renewed: expiry %s, was %s", renewed, before)
	}
	if err := creds.ensure(context.Background(), ""); err != nil || !expiry().Equal(renewed) {
		t.Errorf("a fresh certificate was not reused: %v", err)
	}
	// Another node's certificate in the directory is not ours.
	other, otherKey, _ := srv.Bundle.IssueClientCert("system:node:r2", []string{"system:nodes"}, time.Hour)
	_ = os.WriteFile(filepath.Join(dir, nodeCertFile), other, 0o600)
	_ = os.WriteFile(filepath.Join(dir, nodeKeyFile), otherKey, 0o600)
	if err := creds.ensure(context.Background(), ""); err == nil {
		t.Error("another node's certificate was used, and without a token")
	}
}

// A node's serving certificate is issued for the name and address its Node
// reports, and one past two thirds of its life is replaced by the loop,
// with the node's client certificate; the new one is handed to the node
// API and stored.
func TestServingCertificateRenew(t *testing.T) {
	srv := apiservertest.Start(t)
	dir := t.TempDir()
	creds := &nodeCredentials{dir: dir, server: srv.URL, nodeName: "s1", caPEM: srv.Bundle.CAPEM, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	certPEM, keyPEM, err := srv.Bundle.IssueClientCert("system:node:s1", []string{"system:nodes"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, nodeCertFile), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, nodeKeyFile), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	hosts := []string{"s1", "10.9.8.7"}
	// Due for renewal: ten minutes of validity.
	old, err := srv.Bundle.IssueServingCert("system:node:s1", hosts, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	oldKey, err := x509.MarshalECPrivateKey(old.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, servingCertFile), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: old.Certificate[0]}), 0o644)
	_ = os.WriteFile(filepath.Join(dir, servingKeyFile), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: oldKey}), 0o600)
	_ = os.WriteFile(filepath.Join(dir, servingCAFile), srv.Bundle.NodeCAPEM, 0o644)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var used []*x509.Certificate
	done := make(chan struct{})
	go func() {
		defer close(done)
		creds.servingLoop(ctx, hosts, func(c *tls.Certificate) {
			leaf, err := x509.ParseCertificate(c.Certificate[0])
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			used = append(used, leaf)
			mu.Unlock()
		})
	}()
	latest := func() *x509.Certificate {
		mu.Lock()
		defer mu.Unlock()
		if len(used) == 0 {
			return nil
		}
		return used[len(used)-1]
	}
	// No Node yet: nothing is issued, the old certificate stays in use.
	time.Sleep(time.Second)
	oldLeaf, err := x509.ParseCertificate(old.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if l := latest(); l == nil || !l.NotAfter.Equal(oldLeaf.NotAfter) {
		t.Fatalf("before the Node exists the loop used %v, want the stored certificate", l)
	}
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "s1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.9.8.7"}, {Type: corev1.NodeHostName, Address: "s1"}}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if l := latest(); l != nil && l.NotAfter.After(time.Now().Add(24*time.Hour)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the serving certificate was not renewed once the Node reported its address")
		}
		time.Sleep(100 * time.Millisecond)
	}
	stored, _, ok := creds.loadServing(hosts)
	if !ok || !stored.NotAfter.After(time.Now().Add(24*time.Hour)) {
		t.Errorf("the renewed serving certificate was not stored")
	}
	if ca, err := os.ReadFile(filepath.Join(dir, servingCAFile)); err != nil || string(ca) != string(srv.Bundle.NodeCAPEM) {
		t.Errorf("the node CA was not stored with the serving certificate (%v)", err)
	}
	if stored != nil {
		if _, err := stored.Verify(x509.VerifyOptions{Roots: srv.Bundle.CAPool(), DNSName: "s1", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
			t.Error("the node's serving certificate verifies against the cluster CA, which clients trust for the API server")
		}
	}
	cancel()
	<-done
}

// A serving certificate from the cluster CA (issued before the node CA
// existed) stays in use until its renewal; one from the node CA is
// trusted for the node CA stored with it, until the node joins afresh with
// the token (maybe to a cluster made anew), when it is asked for again.
func TestStoredServingCertificateTrust(t *testing.T) {
	srv := apiservertest.Start(t)
	dir := t.TempDir()
	creds := &nodeCredentials{dir: dir, server: srv.URL, nodeName: "t1", caPEM: srv.Bundle.CAPEM, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	hosts := []string{"t1", "10.9.8.6"}
	store := func(cert tls.Certificate, ca []byte) {
		t.Helper()
		key, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
		if err != nil {
			t.Fatal(err)
		}
		_ = os.WriteFile(filepath.Join(dir, servingCertFile), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o644)
		_ = os.WriteFile(filepath.Join(dir, servingKeyFile), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: key}), 0o600)
		_ = os.Remove(filepath.Join(dir, servingCAFile))
		if ca != nil {
			_ = os.WriteFile(filepath.Join(dir, servingCAFile), ca, 0o644)
		}
	}
	fromNodeCA, err := srv.Bundle.IssueServingCert("system:node:t1", hosts, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	store(fromNodeCA, nil)
	if _, _, ok := creds.loadServing(hosts); ok {
		t.Error("a serving certificate from a node CA not stored with it was used")
	}
	store(fromNodeCA, srv.Bundle.NodeCAPEM)
	if _, _, ok := creds.loadServing(hosts); !ok {
		t.Fatal("a serving certificate from the stored node CA was not used")
	}
	if err := creds.ensure(context.Background(), apiservertest.AdminToken); err != nil {
		t.Fatalf("join: %v", err)
	}
	if _, _, ok := creds.loadServing(hosts); ok {
		t.Error("after joining afresh, the serving certificate was trusted for the node CA stored before")
	}

	// Before the node CA: the cluster CA signed serving certificates.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "system:node:t1", Organization: []string{"system:nodes"}},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"t1"}, IPAddresses: []net.IP{net.ParseIP("10.9.8.6")},
	}, srv.Bundle.CACert, &key.PublicKey, srv.Bundle.CAKey)
	if err != nil {
		t.Fatal(err)
	}
	legacy := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	store(legacy, nil)
	if _, _, ok := creds.loadServing(hosts); !ok {
		t.Error("a serving certificate from the cluster CA was not used until its renewal")
	}
}
