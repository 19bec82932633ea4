package pki

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"time"
)

// NewClientCSR makes a key and a certificate signing request for user in
// groups, as PEM: what a node agent sends to join, keeping its key to itself.
func NewClientCSR(user string, groups []string) (csrPEM, keyPEM []byte, err error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: user, Organization: groups},
	}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: certificate request: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), keyPEM, nil
}

// SignClientCSR certifies the key of a PEM certificate request as a client
// of the cluster for exactly user in groups (the request must say the same,
// so nobody gets a name it did not ask for) for ttl.
func (b *Bundle) SignClientCSR(csrPEM []byte, user string, groups []string, ttl time.Duration) ([]byte, error) {
	block, _ := pem.Decode(csrPEM)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("pki: not a PEM CERTIFICATE REQUEST")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("pki: certificate request: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("pki: certificate request is not signed by its key: %w", err)
	}
	if csr.Subject.CommonName != user || !slices.Equal(csr.Subject.Organization, groups) {
		return nil, fmt.Errorf("pki: certificate request is for %q in %v, want %q in %v", csr.Subject.CommonName, csr.Subject.Organization, user, groups)
	}
	if len(csr.DNSNames)+len(csr.IPAddresses)+len(csr.EmailAddresses)+len(csr.URIs) > 0 {
		return nil, errors.New("pki: a client certificate request may not ask for subject alternative names")
	}
	if _, ok := csr.PublicKey.(*ecdsa.PublicKey); !ok {
		return nil, fmt.Errorf("pki: certificate request key is %T, want ECDSA", csr.PublicKey)
	}
	return b.sign(leafSpec{commonName: user, groups: groups, clientAuth: true, validity: ttl}, csr.PublicKey, time.Now())
}
