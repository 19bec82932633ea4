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
// directory (node.key, node.crt, ca.crt). The agent join token is used once,
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
	// Joining afresh (maybe with a cluster made anew): a stored serving
	// certificate is trusted no longer for the node CA kept with it, so
	// it verifies only if the cluster CA signed it, else a new one is
	// asked for.
	if err := os.Remove(n.path(servingCAFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("node credentials: %w", err)
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

// The node API's serving certificate, kept next to the client one with
// the CA that signed it. The API server verifies it when it proxies logs,
// exec, attach and port-forward, so it must chain to the node CA (or the
// cluster CA, which signed those issued before the node CA existed) and
// name the address the node reports; the server issues it only to the node
// itself and only for its own name and addresses (nodejoin.UsageServing).
const (
	servingKeyFile  = "serving.key"
	servingCertFile = "serving.crt"
	servingCAFile   = "serving-ca.crt"
)

// loadServing returns the stored serving certificate if it is this node's,
// verifies against the node CA stored with it (or the cluster CA) as a
// server certificate for every host, and has not expired.
func (n *nodeCredentials) loadServing(hosts []string) (*x509.Certificate, *tls.Certificate, bool) {
	pair, err := tls.LoadX509KeyPair(n.path(servingCertFile), n.path(servingKeyFile))
	if err != nil {
		return nil, nil, false
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil || cert.Subject.CommonName != bootstrap.NodeUserPrefix+n.nodeName {
		return nil, nil, false
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(n.caPEM) {
		return nil, nil, false
	}
	if nodeCA, err := os.ReadFile(n.path(servingCAFile)); err == nil {
		roots.AppendCertsFromPEM(nodeCA)
	}
	for _, h := range hosts {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: h, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			return nil, nil, false
		}
	}
	return cert, &pair, true
}

// requestServing obtains a serving certificate for hosts, authenticated by
// the node's client certificate, and stores it with its key.
func (n *nodeCredentials) requestServing(ctx context.Context, hosts []string) (*tls.Certificate, error) {
	_, client, ok := n.load()
	if !ok {
		return nil, fmt.Errorf("no usable node client certificate in %s", n.dir)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(n.caPEM) {
		return nil, errors.New("node credentials: the CA file holds no certificate")
	}
	csr, keyPEM, err := pki.NewServingCSR(bootstrap.NodeUserPrefix+n.nodeName, []string{bootstrap.NodesGroup}, hosts)
	if err != nil {
		return nil, err
	}
	tc := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{client}}
	resp, err := (&nodejoin.Client{Server: n.server, TLS: tc}).Send(ctx, nodejoin.Request{NodeName: n.nodeName, CSR: csr, Usage: nodejoin.UsageServing})
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(resp.Certificate, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("node credentials: the server's serving certificate does not match our key: %w", err)
	}
	// The CA first: a certificate stored without it would not verify and
	// be asked for again, never the other way round.
	if err := writeAtomic(n.path(servingCAFile), resp.CA, 0o644); err != nil {
		return nil, err
	}
	if err := writeAtomic(n.path(servingKeyFile), keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := writeAtomic(n.path(servingCertFile), resp.Certificate, 0o644); err != nil {
		return nil, err
	}
	if c, err := x509.ParseCertificate(pair.Certificate[0]); err == nil {
		n.log.Info("node API serving certificate issued", "node", n.nodeName, "hosts", hosts, "expires", c.NotAfter)
	}
	return &pair, nil
}

// servingLoop keeps a serving certificate for hosts in use: the stored
// one while it is good, else a new one, renewed two thirds into its life,
// until ctx ends. The server issues one only once the Node reports the
// addresses, so a first request right after start may be refused; it is
// retried after 3 s, doubling to a minute.
func (n *nodeCredentials) servingLoop(ctx context.Context, hosts []string, use func(*tls.Certificate)) {
	failures := 0
	for {
		var wait time.Duration
		cert, pair, ok := n.loadServing(hosts)
		switch {
		case ok && time.Now().Before(renewAt(cert)):
			use(pair)
			wait = time.Until(renewAt(cert))
		default:
			if ok {
				use(pair) // still valid while its renewal is under way
			}
			fresh, err := n.requestServing(ctx, hosts)
			if err == nil {
				use(fresh)
				failures = 0
				continue
			}
			if ctx.Err() != nil {
				return
			}
			failures++
			if failures == 1 || failures%20 == 0 {
				n.log.Info("no node API serving certificate yet; retrying", "err", err, "attempts", failures)
			}
			// 3 s doubling to a minute.
			wait = min(3*time.Second<<min(failures-1, 5), time.Minute)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}
