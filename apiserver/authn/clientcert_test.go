package authn_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/apiserver/pki"
)

func requestWith(t *testing.T, certPEM, keyPEM []byte) *http.Request {
	t.Helper()
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	var chain []*x509.Certificate
	for _, der := range pair.Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		chain = append(chain, c)
	}
	r, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1/api", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: chain}
	return r
}

// TestClientCertCache: verified chains are remembered per chain, never
// confused with another certificate, and callers cannot change what is
// cached.
func TestClientCertCache(t *testing.T) {
	ours, err := pki.Ensure(filepath.Join(t.TempDir(), "a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := pki.Ensure(filepath.Join(t.TempDir(), "b"), nil)
	if err != nil {
		t.Fatal(err)
	}
	a := authn.NewClientCert(ours.CAPool())
	alicePEM, aliceKey, _ := ours.IssueClientCert("alice", []string{"dev"}, time.Hour)
	bobPEM, bobKey, _ := ours.IssueClientCert("bob", nil, time.Hour)
	evePEM, eveKey, _ := theirs.IssueClientCert("alice", []string{"dev"}, time.Hour)

	for i := 0; i < 3; i++ { // the first verifies, the others come from the cache
		u, ok, err := a.Authenticate(requestWith(t, alicePEM, aliceKey))
		if err != nil || !ok || u.Name != "alice" || len(u.Groups) != 2 || u.Groups[0] != "dev" {
			t.Fatalf("alice (call %d): %+v %v %v", i, u, ok, err)
		}
		u.Groups[0] = "system:masters" // must not leak into the next call
	}
	if u, _, err := a.Authenticate(requestWith(t, bobPEM, bobKey)); err != nil || u.Name != "bob" {
		t.Fatalf("bob: %+v %v", u, err)
	}
	// The same names from another CA are still refused.
	if _, _, err := a.Authenticate(requestWith(t, evePEM, eveKey)); !errors.Is(err, authn.ErrInvalidCredential) {
		t.Fatalf("certificate from another CA: %v", err)
	}
}
