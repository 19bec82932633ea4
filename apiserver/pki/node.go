package pki

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"time"
)

// IssueServingCert signs a TLS serving certificate for a node's API with
// the node CA, named commonName and valid for hosts (IP addresses and DNS
// names), and returns it loaded. Nothing is written to disk: the embedded
// agent asks for a fresh one at every start.
func (b *Bundle) IssueServingCert(commonName string, hosts []string, ttl time.Duration) (tls.Certificate, error) {
	if strings.TrimSpace(commonName) == "" {
		return tls.Certificate{}, errors.New("pki: serving certificate needs a common name")
	}
	var sans sanSet
	for _, h := range hosts {
		if err := sans.add(h); err != nil {
			return tls.Certificate{}, err
		}
	}
	if len(sans.dns) == 0 && len(sans.ips) == 0 {
		return tls.Certificate{}, fmt.Errorf("pki: serving certificate for %q needs at least one host", commonName)
	}
	certPEM, keyPEM, err := issue(b.nodeCA(), leafSpec{commonName: commonName, serverAuth: true, sans: sans, validity: ttl}, time.Now())
	if err != nil {
		return tls.Certificate{}, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("pki: load serving pair for %q: %w", commonName, err)
	}
	return pair, nil
}
