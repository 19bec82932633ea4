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
		if _, err := cert.Verify(x509.VerifyOptions{Roots: b.CAPool(), DNSName: h, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("certificate does not serve %s: %v", h, err)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: b.CAPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
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
