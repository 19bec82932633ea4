package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

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
