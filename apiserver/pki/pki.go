package pki

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// File names inside the PKI directory.
const (
	CACertFile     = "ca.crt"
	CAKeyFile      = "ca.key"
	ServerCertFile = "server.crt"
	ServerKeyFile  = "server.key"
	AdminCertFile  = "admin.crt"
	AdminKeyFile   = "admin.key"
	// NodeCACertFile and NodeCAKeyFile are the node CA, which signs node
	// APIs' serving certificates and which only the API server trusts
	// (for node APIs): a node writes the addresses in its own Node status,
	// so a certificate for them must not be one clients accept for the
	// API server.
	NodeCACertFile = "node-ca.crt"
	NodeCAKeyFile  = "node-ca.key"
	// ServiceAccountKeyFile signs service account tokens (JWTs). It is
	// not a certificate: tokens are verified with its public half.
	ServiceAccountKeyFile = "sa.key"
)

// Identity of the admin client certificate. system:masters is the group the
// default RBAC policy binds to cluster-admin.
const (
	AdminUser  = "skiff-admin"
	AdminGroup = "system:masters"
)

// Lifetimes and the renewal margin.
const (
	CAValidity     = 10 * 365 * 24 * time.Hour
	LeafValidity   = 365 * 24 * time.Hour
	RenewBefore    = 30 * 24 * time.Hour
	clockSkewGrace = time.Hour
)

// Bundle is the loaded PKI: the CA (to verify clients and issue more
// certificates), the serving certificate and the admin credential.
type Bundle struct {
	// Dir is the directory the files live in.
	Dir string
	// CACert and CAKey are the cluster CA.
	CACert *x509.Certificate
	CAKey  *ecdsa.PrivateKey
	// CAPEM is ca.crt as written: what clients put in certificate-authority-data.
	CAPEM []byte
	// NodeCACert, NodeCAKey and NodeCAPEM are the node CA, which signs node
	// APIs' serving certificates (NodeAPIClientTLSConfig trusts it).
	NodeCACert *x509.Certificate
	NodeCAKey  *ecdsa.PrivateKey
	NodeCAPEM  []byte
	// Serving is the HTTPS certificate with its key; Leaf is set.
	Serving tls.Certificate
	// AdminCertPEM and AdminKeyPEM are the admin client credential.
	AdminCertPEM []byte
	AdminKeyPEM  []byte
	// ServiceAccountKey signs service account tokens.
	ServiceAccountKey *ecdsa.PrivateKey
}

// Ensure loads the PKI in dir, creating whatever is missing, and re-issues
// the serving certificate when it lacks one of the wanted names or addresses
// (localhost, loopback, the host name and interface addresses, the in-cluster
// service names, and extraSANs) or is close to expiry. extraSANs may mix IP
// addresses and DNS names; an entry that is neither is an error.
func Ensure(dir string, extraSANs []string) (*Bundle, error) {
	want, err := wantedSANs(extraSANs)
	if err != nil {
		return nil, err
	}
	return ensure(dir, want, time.Now())
}

func ensure(dir string, want sanSet, now time.Time) (*Bundle, error) {
	if dir == "" {
		return nil, errors.New("pki: directory is empty")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: create %s: %w", dir, err)
	}
	b := &Bundle{Dir: dir}
	var err error
	if b.CACert, b.CAKey, b.CAPEM, err = b.ensureCA(CACertFile, CAKeyFile, "skiff-ca", now); err != nil {
		return nil, err
	}
	if b.NodeCACert, b.NodeCAKey, b.NodeCAPEM, err = b.ensureCA(NodeCACertFile, NodeCAKeyFile, "skiff-node-ca", now); err != nil {
		return nil, err
	}
	if err := b.ensureServing(want, now); err != nil {
		return nil, err
	}
	if err := b.ensureAdmin(now); err != nil {
		return nil, err
	}
	if err := b.ensureServiceAccountKey(); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *Bundle) path(name string) string { return filepath.Join(b.Dir, name) }

// ensureCA loads a CA's certificate and key (certFile, keyFile) or creates
// them, named name@<now>, when both are absent. Only one of the two
// existing is an error, not a reason to mint a new CA: a new CA would
// silently orphan every credential issued so far.
func (b *Bundle) ensureCA(certFile, keyFile, name string, now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
	certPath, keyPath := b.path(certFile), b.path(keyFile)
	certOK, err := exists(certPath)
	if err != nil {
		return nil, nil, nil, err
	}
	keyOK, err := exists(keyPath)
	if err != nil {
		return nil, nil, nil, err
	}
	switch {
	case certOK && keyOK:
		cert, certPEM, err := readCert(certPath)
		if err != nil {
			return nil, nil, nil, err
		}
		key, _, err := readKey(keyPath)
		if err != nil {
			return nil, nil, nil, err
		}
		if !cert.IsCA {
			return nil, nil, nil, fmt.Errorf("pki: %s is not a CA certificate", certPath)
		}
		if !publicKeyMatches(cert, key) {
			return nil, nil, nil, fmt.Errorf("pki: %s does not belong to the certificate in %s", keyPath, certPath)
		}
		return cert, key, certPEM, nil
	case certOK != keyOK:
		missing := keyPath
		if !certOK {
			missing = certPath
		}
		return nil, nil, nil, fmt.Errorf("pki: %s is missing while its pair exists; restore it or remove both to create a new CA (which invalidates every issued credential)", missing)
	}
	cert, key, certPEM, keyPEM, err := newCA(name, now)
	if err != nil {
		return nil, nil, nil, err
	}
	// Key first: a crash between the two writes leaves only a key, which the
	// check above reports instead of silently making another CA.
	if err := writeFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return nil, nil, nil, err
	}
	if err := writeFileAtomic(certPath, certPEM, 0o644); err != nil {
		return nil, nil, nil, err
	}
	return cert, key, certPEM, nil
}

func (b *Bundle) ensureServing(want sanSet, now time.Time) error {
	certPath, keyPath := b.path(ServerCertFile), b.path(ServerKeyFile)
	cert, certPEM, keyPEM, err := b.loadLeaf(certPath, keyPath, now)
	if err != nil {
		return err
	}
	if cert == nil || !want.coveredBy(cert) {
		certPEM, keyPEM, err = issue(b.clusterCA(), leafSpec{
			commonName: "skiff-apiserver",
			serverAuth: true,
			sans:       want,
			validity:   LeafValidity,
		}, now)
		if err != nil {
			return err
		}
		if err := writePair(certPath, keyPath, certPEM, keyPEM); err != nil {
			return err
		}
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("pki: load serving pair %s: %w", certPath, err)
	}
	b.Serving = pair
	return nil
}

func (b *Bundle) ensureAdmin(now time.Time) error {
	certPath, keyPath := b.path(AdminCertFile), b.path(AdminKeyFile)
	cert, certPEM, keyPEM, err := b.loadLeaf(certPath, keyPath, now)
	if err != nil {
		return err
	}
	if cert == nil {
		certPEM, keyPEM, err = issue(b.clusterCA(), leafSpec{
			commonName: AdminUser,
			groups:     []string{AdminGroup},
			clientAuth: true,
			validity:   LeafValidity,
		}, now)
		if err != nil {
			return err
		}
		if err := writePair(certPath, keyPath, certPEM, keyPEM); err != nil {
			return err
		}
	}
	b.AdminCertPEM, b.AdminKeyPEM = certPEM, keyPEM
	return nil
}

// loadLeaf reads a certificate/key pair issued by the bundle's CA. It returns
// a nil certificate (and no error) when the pair should be (re-)issued: a file
// is missing, the certificate comes from another CA (the CA was restored from
// elsewhere), or it expires within RenewBefore. Unreadable or corrupt files are
// errors: overwriting them would hide a problem the operator should see.
func (b *Bundle) loadLeaf(certPath, keyPath string, now time.Time) (*x509.Certificate, []byte, []byte, error) {
	certOK, err := exists(certPath)
	if err != nil {
		return nil, nil, nil, err
	}
	keyOK, err := exists(keyPath)
	if err != nil {
		return nil, nil, nil, err
	}
	if !certOK || !keyOK {
		return nil, nil, nil, nil
	}
	cert, certPEM, err := readCert(certPath)
	if err != nil {
		return nil, nil, nil, err
	}
	key, keyPEM, err := readKey(keyPath)
	if err != nil {
		return nil, nil, nil, err
	}
	if !publicKeyMatches(cert, key) {
		return nil, nil, nil, fmt.Errorf("pki: %s does not belong to the certificate in %s", keyPath, certPath)
	}
	if cert.CheckSignatureFrom(b.CACert) != nil {
		return nil, nil, nil, nil
	}
	if now.Add(RenewBefore).After(cert.NotAfter) {
		return nil, nil, nil, nil
	}
	return cert, certPEM, keyPEM, nil
}

// ensureServiceAccountKey loads sa.key or creates it. Replacing it would
// invalidate every token issued, so a corrupt file is an error.
func (b *Bundle) ensureServiceAccountKey() error {
	path := b.path(ServiceAccountKeyFile)
	ok, err := exists(path)
	if err != nil {
		return err
	}
	if ok {
		key, _, err := readKey(path)
		if err != nil {
			return err
		}
		b.ServiceAccountKey = key
		return nil
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return err
	}
	if err := writeFileAtomic(path, keyPEM, 0o600); err != nil {
		return err
	}
	b.ServiceAccountKey = key
	return nil
}

func writePair(certPath, keyPath string, certPEM, keyPEM []byte) error {
	if err := writeFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	return writeFileAtomic(certPath, certPEM, 0o644)
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, fmt.Errorf("pki: %w", err)
}

// writeFileAtomic writes through a temporary file in the same directory and a
// rename, so readers (and a crash) see the old file or the new one, never half.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	return nil
}
