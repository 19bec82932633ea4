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
	csr, err := parseCSRFor(csrPEM, user, groups)
	if err != nil {
		return nil, err
	}
	if len(csr.DNSNames)+len(csr.IPAddresses)+len(csr.EmailAddresses)+len(csr.URIs) > 0 {
		return nil, errors.New("pki: a client certificate request may not ask for subject alternative names")
	}
	if _, ok := csr.PublicKey.(*ecdsa.PublicKey); !ok {
		return nil, fmt.Errorf("pki: certificate request key is %T, want ECDSA", csr.PublicKey)
	}
	return sign(b.clusterCA(), leafSpec{commonName: user, groups: groups, clientAuth: true, validity: ttl}, csr.PublicKey, time.Now())
}

// NewServingCSR makes a key and a certificate signing request for a node's
// serving certificate: CN=user, O=groups, valid for hosts (IP addresses and
// DNS names), as PEM.
func NewServingCSR(user string, groups, hosts []string) (csrPEM, keyPEM []byte, err error) {
	var sans sanSet
	for _, h := range hosts {
		if err := sans.add(h); err != nil {
			return nil, nil, err
		}
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: user, Organization: groups}, DNSNames: sans.dns, IPAddresses: sans.ips,
	}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: certificate request: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), keyPEM, nil
}

// SignServingCSR certifies the key of a PEM certificate request as a TLS
// server for exactly user in groups (as Kubernetes' kubelet-serving
// signer: CN=system:node:<name>, O=system:nodes) and the subject
// alternative names the request asks for, each of which must be among
// allowedHosts (IP addresses and DNS names); at least one is required.
// The node CA signs it, not the cluster CA: allowedHosts come from what
// the node reports about itself, which may be 127.0.0.1 or the API
// server's own names, and clients trusting the cluster CA must never take
// a node for the API server.
func (b *Bundle) SignServingCSR(csrPEM []byte, user string, groups, allowedHosts []string, ttl time.Duration) ([]byte, error) {
	csr, err := parseCSRFor(csrPEM, user, groups)
	if err != nil {
		return nil, err
	}
	if len(csr.EmailAddresses)+len(csr.URIs) > 0 {
		return nil, errors.New("pki: a serving certificate request may name only DNS names and IP addresses")
	}
	if _, ok := csr.PublicKey.(*ecdsa.PublicKey); !ok {
		return nil, fmt.Errorf("pki: certificate request key is %T, want ECDSA", csr.PublicKey)
	}
	var allowed sanSet
	for _, h := range allowedHosts {
		if err := allowed.add(h); err != nil {
			return nil, err
		}
	}
	var sans sanSet
	for _, d := range csr.DNSNames {
		if err := sans.add(d); err != nil {
			return nil, err
		}
	}
	for _, ip := range csr.IPAddresses {
		sans.addIP(ip)
	}
	if len(sans.dns)+len(sans.ips) == 0 {
		return nil, errors.New("pki: a serving certificate request must name at least one DNS name or IP address")
	}
	for _, d := range sans.dns {
		if !slices.Contains(allowed.dns, d) {
			return nil, fmt.Errorf("pki: DNS name %q is not one of %s's: %v", d, user, allowed.dns)
		}
	}
	for _, ip := range sans.ips {
		if !slices.ContainsFunc(allowed.ips, ip.Equal) {
			return nil, fmt.Errorf("pki: IP address %s is not one of %s's: %v", ip, user, allowed.ips)
		}
	}
	return sign(b.nodeCA(), leafSpec{commonName: user, groups: groups, serverAuth: true, sans: sans, validity: ttl}, csr.PublicKey, time.Now())
}

// parseCSRFor decodes a PEM certificate request, checks it is signed by
// its own key and asks for exactly user in groups (so nobody gets a name it
// did not ask for).
func parseCSRFor(csrPEM []byte, user string, groups []string) (*x509.CertificateRequest, error) {
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
	return csr, nil
}
