package authn_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net/http"
	"path/filepath"
	"slices"
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

// TestClientCertRefusals: a certificate of the cluster CA authenticates only
// as a client certificate within its validity, as Kubernetes' x509
// authenticator verifies it: a node's serving certificate (serverAuth only)
// is no client identity, and an expired or not yet valid one is refused.
func TestClientCertRefusals(t *testing.T) {
	b, err := pki.Ensure(filepath.Join(t.TempDir(), "tls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	a := authn.NewClientCert(b.CAPool())
	serving, err := b.IssueServingCert("system:node:n1", []string{"n1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(notBefore, notAfter time.Time) []byte {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
			SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "mallory", Organization: []string{authn.GroupMasters}},
			NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, BasicConstraintsValid: true,
		}, b.CACert, &key.PublicKey, b.CAKey)
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	now := time.Now()
	for what, der := range map[string][]byte{
		"a serving certificate": serving.Certificate[0],
		"an expired one":        leaf(now.Add(-2*time.Hour), now.Add(-time.Hour)),
		"one not yet valid":     leaf(now.Add(time.Hour), now.Add(2*time.Hour)),
	} {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1/api", nil)
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}}
		for range 2 { // refusals are not cached as successes
			if u, ok, err := a.Authenticate(r); ok || !errors.Is(err, authn.ErrInvalidCredential) {
				t.Errorf("%s: authenticated %+v (%v), want refused", what, u, err)
			}
		}
	}
}

// TestClientCertAuthenticatedGroup: a certificate's user is in
// system:authenticated unless its organizations already name it or
// system:unauthenticated, or it is system:anonymous, as Kubernetes'
// AuthenticatedGroupAdder.
func TestClientCertAuthenticatedGroup(t *testing.T) {
	ca, err := pki.Ensure(filepath.Join(t.TempDir(), "a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	a := authn.NewClientCert(ca.CAPool())
	for _, tc := range []struct {
		cn     string
		groups []string
		want   []string
	}{
		{"alice", nil, []string{"system:authenticated"}},
		{"alice", []string{"dev"}, []string{"dev", "system:authenticated"}},
		{"alice", []string{"system:authenticated"}, []string{"system:authenticated"}},
		{"alice", []string{"system:unauthenticated"}, []string{"system:unauthenticated"}},
		{"system:anonymous", []string{"system:unauthenticated"}, []string{"system:unauthenticated"}},
	} {
		certPEM, keyPEM, err := ca.IssueClientCert(tc.cn, tc.groups, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		u, ok, err := a.Authenticate(requestWith(t, certPEM, keyPEM))
		if err != nil || !ok {
			t.Fatalf("%s %v: %v %v", tc.cn, tc.groups, ok, err)
		}
		if !slices.Equal(u.Groups, tc.want) {
			t.Errorf("%s with O=%v: groups %v, want %v", tc.cn, tc.groups, u.Groups, tc.want)
		}
	}
}
