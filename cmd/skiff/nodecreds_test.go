package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
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
	cancel()
	<-done
}
