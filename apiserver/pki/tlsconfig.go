package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"
)

// CAPool returns a pool holding only the cluster CA.
func (b *Bundle) CAPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(b.CACert)
	return pool
}

// ServerTLSConfig is the API server's TLS configuration: TLS 1.2 or newer,
// the serving certificate, and client certificates verified against the
// cluster CA when a client offers one. Clients without a certificate still
// connect, because bearer tokens and anonymous requests are authenticated
// after the handshake. Each call returns a fresh config the caller may modify.
func (b *Bundle) ServerTLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{b.Serving},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    b.CAPool(),
	}
}

// IssueClientCert signs a client certificate for user (the CN) in groups (the
// O entries), valid for ttl, as Kubernetes' x509 authenticator reads them.
// Nothing is written to disk: node join hands the result to the agent.
func (b *Bundle) IssueClientCert(user string, groups []string, ttl time.Duration) (certPEM, keyPEM []byte, err error) {
	if strings.TrimSpace(user) == "" {
		return nil, nil, errors.New("pki: client certificate needs a user name")
	}
	if ttl <= 0 {
		return nil, nil, fmt.Errorf("pki: client certificate ttl must be positive, got %s", ttl)
	}
	return issue(b.clusterCA(), leafSpec{
		commonName: user,
		groups:     groups,
		clientAuth: true,
		validity:   ttl,
	}, time.Now())
}

// ClientTLSConfig returns a client configuration that trusts only the cluster
// CA and presents the given client credential (PEM certificate and key).
// Pass nil PEMs for a client without a certificate (bearer token, anonymous).
func (b *Bundle) ClientTLSConfig(certPEM, keyPEM []byte) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: b.CAPool()}
	if certPEM == nil && keyPEM == nil {
		return cfg, nil
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: client credential: %w", err)
	}
	cfg.Certificates = []tls.Certificate{pair}
	return cfg, nil
}

// NodeAPIRoots returns the CAs the API server trusts for node APIs' serving
// certificates, and nothing else does: the node CA, which signs them, and
// the cluster CA, which signed them before the node CA existed (those stay
// good until their renewal) and which an operator's --tls-cert-file for a
// node may come from.
func (b *Bundle) NodeAPIRoots() *x509.CertPool {
	pool := b.CAPool()
	pool.AddCert(b.NodeCACert)
	return pool
}

// NodeAPIClientTLSConfig is how the API server reaches node APIs: it
// presents the given client credential (PEM certificate and key) and
// verifies the node against NodeAPIRoots.
func (b *Bundle) NodeAPIClientTLSConfig(certPEM, keyPEM []byte) (*tls.Config, error) {
	cfg, err := b.ClientTLSConfig(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = b.NodeAPIRoots()
	return cfg, nil
}

// AdminTLSConfig is ClientTLSConfig with the admin credential.
func (b *Bundle) AdminTLSConfig() (*tls.Config, error) {
	return b.ClientTLSConfig(b.AdminCertPEM, b.AdminKeyPEM)
}
