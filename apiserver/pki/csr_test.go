package pki

import (
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"
)

func TestSignServingCSRIssuesOnlyAllowedHosts(t *testing.T) {
	b := mustEnsure(t, t.TempDir())
	const user = "system:node:n1"
	groups := []string{"system:nodes"}
	allowed := []string{"n1", "10.0.0.5"}
	csr, _, err := NewServingCSR(user, groups, []string{"n1", "10.0.0.5"})
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := b.SignServingCSR(csr, user, groups, allowed, time.Hour)
	if err != nil {
		t.Fatalf("signing an allowed request: %v", err)
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range allowed {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: b.NodeAPIRoots(), DNSName: h, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("certificate does not serve %s to the API server: %v", h, err)
		}
		// Clients trust the cluster CA for the API server; a node names
		// its own addresses, so its certificate must not chain there.
		if _, err := cert.Verify(x509.VerifyOptions{Roots: b.CAPool(), DNSName: h, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
			t.Errorf("a node's serving certificate verifies for %s against the cluster CA", h)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: b.NodeAPIRoots(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("a serving certificate also works as a client certificate")
	}

	for _, tc := range []struct {
		name  string
		user  string
		hosts []string
		want  string
	}{
		{"foreign IP", user, []string{"n1", "10.0.0.6"}, "IP address 10.0.0.6 is not one of"},
		{"foreign name", user, []string{"n2"}, `DNS name "n2" is not one of`},
		{"another node's identity", "system:node:n2", []string{"n1"}, "certificate request is for"},
	} {
		csr, _, err := NewServingCSR(tc.user, groups, tc.hosts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.SignServingCSR(csr, user, groups, allowed, time.Hour)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	noSANs, _, err := NewServingCSR(user, groups, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.SignServingCSR(noSANs, user, groups, allowed, time.Hour); err == nil {
		t.Error("a serving certificate without any host was signed")
	}
	if _, err := b.SignServingCSR([]byte("garbage"), user, groups, allowed, time.Hour); err == nil {
		t.Error("garbage was signed")
	}
}

// The API server reaches node APIs trusting the node CA and, for
// certificates issued before it existed or given with --tls-cert-file, the
// cluster CA; the embedded node's certificate comes from the node CA.
func TestNodeAPIRootsTrustBothCAs(t *testing.T) {
	b := mustEnsure(t, t.TempDir())
	embedded, err := b.IssueServingCert("system:node:n1", []string{"n1", "127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	legacyPEM, _, err := issue(b.clusterCA(), leafSpec{commonName: "system:node:n1", serverAuth: true, sans: sanSet{dns: []string{"n1"}}, validity: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := parseCertPEM(legacyPEM)
	if err != nil {
		t.Fatal(err)
	}
	opts := func(roots *x509.CertPool) x509.VerifyOptions {
		return x509.VerifyOptions{Roots: roots, DNSName: "n1", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	}
	if _, err := embedded.Leaf.Verify(opts(b.NodeAPIRoots())); err != nil {
		t.Errorf("the embedded node's certificate: %v", err)
	}
	if _, err := embedded.Leaf.Verify(opts(b.CAPool())); err == nil {
		t.Error("the embedded node's certificate verifies against the cluster CA")
	}
	if _, err := legacy.Verify(opts(b.NodeAPIRoots())); err != nil {
		t.Errorf("a node certificate from the cluster CA: %v", err)
	}
	cfg, err := b.NodeAPIClientTLSConfig(b.AdminCertPEM, b.AdminKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := embedded.Leaf.Verify(opts(cfg.RootCAs)); err != nil || len(cfg.Certificates) != 1 {
		t.Errorf("NodeAPIClientTLSConfig: roots %v, %d certificates", err, len(cfg.Certificates))
	}
}
