package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"time"
)

// leafSpec describes a certificate to issue from the CA.
type leafSpec struct {
	commonName string
	groups     []string // Organization: Kubernetes reads client groups from O
	serverAuth bool
	clientAuth bool
	sans       sanSet
	validity   time.Duration
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: generate key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: encode key: %w", err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("pki: serial number: %w", err)
	}
	return n, nil
}

// issuer is a CA that signs leaf certificates.
type issuer struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// clusterCA signs what clients verify the API server with and what the API
// server authenticates clients with; nodeCA signs node APIs' serving
// certificates, which only the API server verifies.
func (b *Bundle) clusterCA() issuer { return issuer{b.CACert, b.CAKey} }
func (b *Bundle) nodeCA() issuer    { return issuer{b.NodeCACert, b.NodeCAKey} }

// newCA makes a self-signed CA named name@<now>.
func newCA(name string, now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, []byte, []byte, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		// The timestamp tells CAs of successive clusters apart in a client's
		// trust store, as k3s does.
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", name, now.Unix())},
		NotBefore:             now.Add(-clockSkewGrace),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("pki: create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("pki: parse new CA certificate: %w", err)
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// issue signs a new leaf certificate with ca and returns it and its fresh
// key as PEM. The leaf never outlives the CA.
func issue(ca issuer, spec leafSpec, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	certPEM, err = sign(ca, spec, &key.PublicKey, now)
	if err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

// sign certifies pub for spec with ca.
func sign(ca issuer, spec leafSpec, pub any, now time.Time) ([]byte, error) {
	if ca.cert == nil || ca.key == nil {
		return nil, errors.New("pki: bundle has no CA")
	}
	if spec.validity <= 0 {
		return nil, fmt.Errorf("pki: validity must be positive, got %s", spec.validity)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(spec.validity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: spec.commonName, Organization: spec.groups},
		NotBefore:             now.Add(-clockSkewGrace),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		DNSNames:              spec.sans.dns,
		IPAddresses:           spec.sans.ips,
	}
	if spec.serverAuth {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if spec.clientAuth {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	if err != nil {
		return nil, fmt.Errorf("pki: sign certificate for %q: %w", spec.commonName, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// readCert reads the first certificate of a PEM file.
func readCert(path string) (*x509.Certificate, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: read %s: %w", path, err)
	}
	cert, err := parseCertPEM(data)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %s: %w", path, err)
	}
	return cert, data, nil
}

func parseCertPEM(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("corrupt certificate: %w", err)
	}
	return cert, nil
}

// readKey reads an ECDSA private key (SEC 1 "EC PRIVATE KEY" or PKCS #8).
func readKey(path string) (*ecdsa.PrivateKey, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: read %s: %w", path, err)
	}
	key, err := parseKeyPEM(data)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %s: %w", path, err)
	}
	return key, data, nil
}

func parseKeyPEM(data []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err := x509.ParseECPrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("corrupt EC private key: %w", err)
		}
		return key, nil
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("corrupt PKCS #8 private key: %w", err)
		}
		key, ok := k.(*ecdsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("private key is %T, want ECDSA", k)
		}
		return key, nil
	default:
		return nil, fmt.Errorf("PEM block is %q, want EC PRIVATE KEY or PRIVATE KEY", block.Type)
	}
}

func publicKeyMatches(cert *x509.Certificate, key *ecdsa.PrivateKey) bool {
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if !ok {
		return false
	}
	a, err1 := x509.MarshalPKIXPublicKey(pub)
	b, err2 := x509.MarshalPKIXPublicKey(&key.PublicKey)
	return err1 == nil && err2 == nil && bytes.Equal(a, b)
}
