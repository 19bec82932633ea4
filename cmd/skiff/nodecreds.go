package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/skiffkube/skiff/apiserver/authz/bootstrap"
	"github.com/skiffkube/skiff/apiserver/nodejoin"
	"github.com/skiffkube/skiff/apiserver/pki"
)

// nodeCredentials keeps a node agent's own client certificate in a
// directory (node.key, node.crt, ca.crt). The cluster token is used once,
// to join; afterwards the certificate renews itself before it expires, and
// client-go, reading the files, picks up the new one.
type nodeCredentials struct {
	dir      string
	server   string
	nodeName string
	caPEM    []byte
	log      *slog.Logger

	mu   sync.Mutex
	cert *tls.Certificate // the stored certificate, loaded when first presented
}

const (
	nodeKeyFile  = "node.key"
	nodeCertFile = "node.crt"
	nodeCAFile   = "ca.crt"
)

func (n *nodeCredentials) path(f string) string { return filepath.Join(n.dir, f) }

// renewAt is when a certificate is due for renewal: two thirds into its life.
func renewAt(c *x509.Certificate) time.Time {
	return c.NotBefore.Add(c.NotAfter.Sub(c.NotBefore) * 2 / 3)
}

// load returns the stored certificate if it is this node's, verifies
// against the CA and has not expired.
func (n *nodeCredentials) load() (*x509.Certificate, tls.Certificate, bool) {
	certPEM, err1 := os.ReadFile(n.path(nodeCertFile))
	keyPEM, err2 := os.ReadFile(n.path(nodeKeyFile))
	if err1 != nil || err2 != nil {
		return nil, tls.Certificate{}, false
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, tls.Certificate{}, false
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil || cert.Subject.CommonName != bootstrap.NodeUserPrefix+n.nodeName {
		return nil, tls.Certificate{}, false
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(n.caPEM) {
		return nil, tls.Certificate{}, false
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, tls.Certificate{}, false
	}
	return cert, pair, true
}

// ensure makes sure a usable certificate is in place: the stored one, a
// renewal of it, or a new one obtained with the join token.
func (n *nodeCredentials) ensure(ctx context.Context, token string) error {
	if err := os.MkdirAll(n.dir, 0o700); err != nil {
		return fmt.Errorf("node credentials: %w", err)
	}
	cert, pair, ok := n.load()
	switch {
	case ok && time.Now().Before(renewAt(cert)):
		n.log.Info("using the stored node certificate", "dir", n.dir, "expires", cert.NotAfter)
		return nil
	case ok:
		return n.request(ctx, &pair, "")
	case token == "":
		return fmt.Errorf("no usable node certificate in %s and no --token to join with", n.dir)
	}
	return n.request(ctx, nil, token)
}

// request obtains a certificate for a fresh key, authenticated by the
// current certificate (renewal) or the token (join), and stores both.
func (n *nodeCredentials) request(ctx context.Context, current *tls.Certificate, token string) error {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(n.caPEM) {
		return errors.New("node credentials: the CA file holds no certificate")
	}
	tc := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if current != nil {
		tc.Certificates = []tls.Certificate{*current}
	}
	csr, keyPEM, err := pki.NewClientCSR(bootstrap.NodeUserPrefix+n.nodeName, []string{bootstrap.NodesGroup})
	if err != nil {
		return err
	}
	resp, err := (&nodejoin.Client{Server: n.server, TLS: tc, Token: token}).Request(ctx, n.nodeName, csr)
	if err != nil {
		return err
	}
	if _, err := tls.X509KeyPair(resp.Certificate, keyPEM); err != nil {
		return fmt.Errorf("node credentials: the server's certificate does not match our key: %w", err)
	}
	// Key first, then certificate: a reader between the two renames sees a
	// mismatched pair and retries; it never sees half a file.
	if err := writeAtomic(n.path(nodeKeyFile), keyPEM, 0o600); err != nil {
		return err
	}
	if err := writeAtomic(n.path(nodeCertFile), resp.Certificate, 0o644); err != nil {
		return err
	}
	if err := writeAtomic(n.path(nodeCAFile), n.caPEM, 0o644); err != nil {
		return err
	}
	n.mu.Lock()
	n.cert = nil // present the new one from now on
	n.mu.Unlock()
	block, _ := pem.Decode(resp.Certificate)
	if c, err := x509.ParseCertificate(block.Bytes); err == nil {
		n.log.Info("node certificate issued", "node", n.nodeName, "expires", c.NotAfter, "renewal", current != nil)
	}
	return nil
}

// restConfig points client-go at the files, so it reloads renewed ones.
func (n *nodeCredentials) restConfig() *rest.Config {
	return &rest.Config{Host: n.server, TLSClientConfig: rest.TLSClientConfig{
		CAFile: n.path(nodeCAFile), CertFile: n.path(nodeCertFile), KeyFile: n.path(nodeKeyFile),
	}}
}

// clientCertificate presents the stored certificate on new connections
// (tls.Config.GetClientCertificate), the renewed one after a renewal.
func (n *nodeCredentials) clientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cert == nil {
		_, pair, ok := n.load()
		if !ok {
			return nil, fmt.Errorf("node %s: no usable certificate in %s", n.nodeName, n.dir)
		}
		n.cert = &pair
	}
	return n.cert, nil
}

// renewLoop renews the certificate when it is due, until ctx ends; a
// failed attempt is retried a minute later.
func (n *nodeCredentials) renewLoop(ctx context.Context) {
	for {
		wait := time.Minute
		if cert, pair, ok := n.load(); ok {
			if d := time.Until(renewAt(cert)); d > 0 {
				wait = d
			} else if err := n.request(ctx, &pair, ""); err != nil {
				n.log.Warn("renewing the node certificate failed; retrying", "err", err)
			} else {
				continue
			}
		} else {
			n.log.Error("the node certificate is gone or expired; rejoin with --token", "dir", n.dir)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
