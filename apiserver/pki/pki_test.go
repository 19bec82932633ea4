package pki

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func mustEnsure(t *testing.T, dir string, extra ...string) *Bundle {
	t.Helper()
	b, err := Ensure(dir, extra)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	return b
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestEnsureCreatesEverything(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	b := mustEnsure(t, dir, "10.9.8.7", "api.example.test")

	if got := fileMode(t, dir); got != 0o700 {
		t.Errorf("dir mode = %o, want 700", got)
	}
	for _, f := range []string{CAKeyFile, NodeCAKeyFile, ServerKeyFile, AdminKeyFile} {
		if got := fileMode(t, filepath.Join(dir, f)); got != 0o600 {
			t.Errorf("%s mode = %o, want 600", f, got)
		}
	}
	for _, f := range []string{CACertFile, NodeCACertFile, ServerCertFile, AdminCertFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}

	if !b.CACert.IsCA || b.CACert.NotAfter.Sub(time.Now()) < 9*365*24*time.Hour {
		t.Errorf("CA: IsCA=%v NotAfter=%v, want a CA valid ~10 years", b.CACert.IsCA, b.CACert.NotAfter)
	}
	if !b.NodeCACert.IsCA || b.NodeCACert.NotAfter.Sub(time.Now()) < 9*365*24*time.Hour {
		t.Errorf("node CA: IsCA=%v NotAfter=%v, want a CA valid ~10 years", b.NodeCACert.IsCA, b.NodeCACert.NotAfter)
	}
	if bytes.Equal(b.NodeCACert.RawSubjectPublicKeyInfo, b.CACert.RawSubjectPublicKeyInfo) {
		t.Error("the node CA has the cluster CA's key")
	}

	leaf := b.Serving.Leaf
	if leaf == nil {
		t.Fatal("serving certificate has no Leaf")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: b.CAPool(), DNSName: "kubernetes.default.svc.cluster.local"}); err != nil {
		t.Errorf("serving cert does not verify for the in-cluster name: %v", err)
	}
	for _, name := range []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "api.example.test"} {
		if err := leaf.VerifyHostname(name); err != nil {
			t.Errorf("serving cert lacks %s: %v", name, err)
		}
	}
	for _, ip := range []string{"127.0.0.1", "::1", "10.9.8.7"} {
		if err := leaf.VerifyHostname(ip); err != nil {
			t.Errorf("serving cert lacks %s: %v", ip, err)
		}
	}
	if host, err := os.Hostname(); err == nil {
		if err := leaf.VerifyHostname(host); err != nil {
			t.Errorf("serving cert lacks host name %s: %v", host, err)
		}
	}
	if d := leaf.NotAfter.Sub(time.Now()); d < 360*24*time.Hour || d > 366*24*time.Hour {
		t.Errorf("serving cert validity = %s, want about a year", d)
	}

	admin, err := parseCertPEM(b.AdminCertPEM)
	if err != nil {
		t.Fatal(err)
	}
	if admin.Subject.CommonName != AdminUser || len(admin.Subject.Organization) != 1 || admin.Subject.Organization[0] != AdminGroup {
		t.Errorf("admin subject = %v, want CN=%s O=%s", admin.Subject, AdminUser, AdminGroup)
	}
	if _, err := admin.Verify(x509.VerifyOptions{Roots: b.CAPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin cert does not verify as a client cert: %v", err)
	}
}

func TestEnsureReusesExistingFiles(t *testing.T) {
	dir := t.TempDir()
	first := mustEnsure(t, dir, "10.1.1.1")
	second := mustEnsure(t, dir, "10.1.1.1")

	if !bytes.Equal(first.CAPEM, second.CAPEM) {
		t.Error("CA changed on reload")
	}
	if !bytes.Equal(first.NodeCAPEM, second.NodeCAPEM) || !first.NodeCAKey.Equal(second.NodeCAKey) {
		t.Error("node CA changed on reload")
	}
	if !bytes.Equal(first.Serving.Certificate[0], second.Serving.Certificate[0]) {
		t.Error("serving certificate re-issued although nothing changed")
	}
	if !bytes.Equal(first.AdminCertPEM, second.AdminCertPEM) || !bytes.Equal(first.AdminKeyPEM, second.AdminKeyPEM) {
		t.Error("admin credential re-issued although nothing changed")
	}
}

func TestNewSANReissuesServingCertButKeepsCA(t *testing.T) {
	dir := t.TempDir()
	first := mustEnsure(t, dir)
	second := mustEnsure(t, dir, "192.0.2.10", "lb.example.test")

	if !bytes.Equal(first.CAPEM, second.CAPEM) {
		t.Fatal("CA changed when a SAN was added")
	}
	if bytes.Equal(first.Serving.Certificate[0], second.Serving.Certificate[0]) {
		t.Fatal("serving certificate was not re-issued for a new SAN")
	}
	for _, name := range []string{"192.0.2.10", "lb.example.test", "localhost"} {
		if err := second.Serving.Leaf.VerifyHostname(name); err != nil {
			t.Errorf("re-issued cert lacks %s: %v", name, err)
		}
	}
	if !bytes.Equal(first.AdminCertPEM, second.AdminCertPEM) {
		t.Error("admin credential changed when only a SAN was added")
	}
	// The new serving certificate is what a third start sees.
	third := mustEnsure(t, dir, "192.0.2.10", "lb.example.test")
	if !bytes.Equal(second.Serving.Certificate[0], third.Serving.Certificate[0]) {
		t.Error("re-issued serving certificate was not persisted")
	}
}

func TestServingCertNearExpiryIsReissued(t *testing.T) {
	dir := t.TempDir()
	want, err := wantedSANs(nil)
	if err != nil {
		t.Fatal(err)
	}
	// Created 340 days ago: 25 days left, inside the 30-day margin.
	past := time.Now().Add(-340 * 24 * time.Hour)
	old, err := ensure(dir, want, past)
	if err != nil {
		t.Fatal(err)
	}
	now, err := ensure(dir, want, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(old.CAPEM, now.CAPEM) {
		t.Error("CA changed on renewal")
	}
	if !now.Serving.Leaf.NotAfter.After(old.Serving.Leaf.NotAfter) {
		t.Errorf("serving cert not renewed: NotAfter %v", now.Serving.Leaf.NotAfter)
	}
	if bytes.Equal(old.AdminCertPEM, now.AdminCertPEM) {
		t.Error("admin cert near expiry was not renewed")
	}
}

func TestBadSANIsRejected(t *testing.T) {
	_, err := Ensure(t.TempDir(), []string{"not a name!"})
	if err == nil || !strings.Contains(err.Error(), "not a name!") {
		t.Fatalf("err = %v, want one naming the bad SAN", err)
	}
}

func TestCorruptFilesAreNamed(t *testing.T) {
	cases := []struct {
		file    string
		content string
	}{
		{CACertFile, "garbage"},
		{CAKeyFile, "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"},
		{ServerCertFile, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"},
		{AdminKeyFile, ""},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			dir := t.TempDir()
			mustEnsure(t, dir)
			path := filepath.Join(dir, tc.file)
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Ensure(dir, nil)
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("err = %v, want an error naming %s", err, path)
			}
		})
	}
}

func TestMissingHalfOfCAIsAnError(t *testing.T) {
	for _, ca := range []struct{ certFile, keyFile string }{{CACertFile, CAKeyFile}, {NodeCACertFile, NodeCAKeyFile}} {
		dir := t.TempDir()
		mustEnsure(t, dir)
		before, err := os.ReadFile(filepath.Join(dir, ca.certFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(dir, ca.keyFile)); err != nil {
			t.Fatal(err)
		}
		if _, err := Ensure(dir, nil); err == nil || !strings.Contains(err.Error(), ca.keyFile) {
			t.Fatalf("err = %v, want an error naming the missing key %s", err, ca.keyFile)
		}
		after, err := os.ReadFile(filepath.Join(dir, ca.certFile))
		if err != nil || !bytes.Equal(before, after) {
			t.Fatalf("%s was replaced (%v)", ca.certFile, err)
		}
	}
}

// An existing cluster's directory has no node CA: one is added, and the
// cluster CA and the API server's certificate stay as they were.
func TestNodeCAIsAddedToAnExistingDirectory(t *testing.T) {
	dir := t.TempDir()
	first := mustEnsure(t, dir)
	for _, f := range []string{NodeCACertFile, NodeCAKeyFile} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	second := mustEnsure(t, dir)
	if !bytes.Equal(first.CAPEM, second.CAPEM) || !bytes.Equal(first.Serving.Certificate[0], second.Serving.Certificate[0]) {
		t.Error("adding the node CA replaced the cluster CA or the serving certificate")
	}
	if second.NodeCACert == nil || bytes.Equal(first.NodeCAPEM, second.NodeCAPEM) {
		t.Error("no new node CA")
	}
}

// serve starts an HTTPS server on 127.0.0.1 with the bundle's server config
// that answers with the verified client's common name, or "anonymous".
func serve(t *testing.T, b *Bundle) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			io.WriteString(w, "anonymous")
			return
		}
		io.WriteString(w, r.TLS.VerifiedChains[0][0].Subject.CommonName)
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener.Close()
	srv.Listener = ln
	srv.TLS = b.ServerTLSConfig()
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, client *http.Client, url string) (string, error) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

func TestServerTLSConfig(t *testing.T) {
	b := mustEnsure(t, t.TempDir())
	srv := serve(t, b)

	other := mustEnsure(t, t.TempDir()) // a different cluster's CA
	strangerCert, strangerKey, err := other.IssueClientCert("mallory", []string{"system:masters"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	aliceCert, aliceKey, err := b.IssueClientCert("alice", []string{"dev"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name      string
		cert, key []byte
		want      string
		wantErr   bool
	}{
		{name: "admin certificate", cert: b.AdminCertPEM, key: b.AdminKeyPEM, want: AdminUser},
		{name: "issued client certificate", cert: aliceCert, key: aliceKey, want: "alice"},
		{name: "no certificate still connects", want: "anonymous"},
		{name: "certificate from another CA is refused", cert: strangerCert, key: strangerKey, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := b.ClientTLSConfig(tc.cert, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
			got, err := get(t, client, srv.URL)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("request succeeded with %q, want a TLS failure", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("server saw %q, want %q", got, tc.want)
			}
		})
	}

	cfg := b.ServerTLSConfig()
	if cfg.MinVersion != tls.VersionTLS12 || cfg.ClientAuth != tls.VerifyClientCertIfGiven {
		t.Errorf("MinVersion=%x ClientAuth=%v", cfg.MinVersion, cfg.ClientAuth)
	}
	// A client that trusts only the other cluster's CA refuses our server.
	foreign, _ := other.ClientTLSConfig(nil, nil)
	if _, err := get(t, &http.Client{Transport: &http.Transport{TLSClientConfig: foreign}}, srv.URL); err == nil {
		t.Error("client trusting another CA accepted the serving certificate")
	}
}

func TestIssueClientCertRejectsBadInput(t *testing.T) {
	b := mustEnsure(t, t.TempDir())
	if _, _, err := b.IssueClientCert("", nil, time.Hour); err == nil {
		t.Error("empty user accepted")
	}
	if _, _, err := b.IssueClientCert("bob", nil, 0); err == nil {
		t.Error("zero ttl accepted")
	}
	certPEM, _, err := b.IssueClientCert("system:node:n1", []string{"system:nodes"}, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "system:node:n1" || cert.Subject.Organization[0] != "system:nodes" {
		t.Errorf("subject = %v", cert.Subject)
	}
	if d := time.Until(cert.NotAfter); d > 2*time.Hour || d < time.Hour {
		t.Errorf("NotAfter in %s, want about 2h", d)
	}
}

func TestWriteKubeconfigConnects(t *testing.T) {
	b := mustEnsure(t, t.TempDir())
	srv := serve(t, b)
	path := filepath.Join(t.TempDir(), "sub", "kubeconfig.yaml")
	if err := WriteKubeconfig(path, srv.URL, b); err != nil {
		t.Fatal(err)
	}
	if got := fileMode(t, path); got != 0o600 {
		t.Errorf("kubeconfig mode = %o, want 600", got)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"certificate-authority-data", "client-certificate-data", "client-key-data", "current-context: skiff"} {
		if !strings.Contains(string(raw), field) {
			t.Errorf("kubeconfig lacks %q", field)
		}
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("clientcmd cannot load the kubeconfig: %v", err)
	}
	if cfg.Host != srv.URL {
		t.Errorf("host = %q, want %q", cfg.Host, srv.URL)
	}
	for name, restCfg := range map[string]*rest.Config{"kubeconfig": cfg, "AdminRESTConfig": b.AdminRESTConfig(srv.URL)} {
		client, err := rest.HTTPClientFor(restCfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := get(t, client, srv.URL)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != AdminUser {
			t.Errorf("%s: server saw %q, want %q", name, got, AdminUser)
		}
	}

	if err := WriteKubeconfig(path, "", b); err == nil {
		t.Error("empty server URL accepted")
	}
}

// TestRealKubectlUsesKubeconfig checks the written kubeconfig with the real
// kubectl: it must trust the serving certificate for 127.0.0.1 and present
// the admin certificate.
func TestRealKubectlUsesKubeconfig(t *testing.T) {
	const kubectl = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"
	if _, err := os.Stat(kubectl); err != nil {
		t.Skip("kubectl 1.33 is not on this machine")
	}
	b := mustEnsure(t, t.TempDir())
	srv := serve(t, b)
	home := t.TempDir()
	path := filepath.Join(home, "kubeconfig.yaml")
	if err := WriteKubeconfig(path, srv.URL, b); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(kubectl, "--kubeconfig="+path, "--cache-dir="+filepath.Join(home, "cache"), "--request-timeout=20s", "get", "--raw", "/")
	cmd.Env = []string{"HOME=" + home}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl: %v\n%s", err, out)
	}
	if strings.TrimSpace(string(out)) != AdminUser {
		t.Errorf("server saw %q through kubectl, want %q", out, AdminUser)
	}
}

func TestKeyFromAnotherPairIsRefused(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	mustEnsure(t, dir)
	mustEnsure(t, other)
	for _, f := range []string{CAKeyFile, ServerKeyFile} {
		t.Run(f, func(t *testing.T) {
			d := t.TempDir()
			for _, name := range []string{CACertFile, CAKeyFile, ServerCertFile, ServerKeyFile, AdminCertFile, AdminKeyFile} {
				data, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				if name == f {
					if data, err = os.ReadFile(filepath.Join(other, name)); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.WriteFile(filepath.Join(d, name), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Ensure(d, nil)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(d, f)) || !strings.Contains(err.Error(), "does not belong") {
				t.Fatalf("err = %v, want a mismatch error naming %s", err, f)
			}
		})
	}
}

func TestWantedSANsIncludeHostAddresses(t *testing.T) {
	want, err := wantedSANs([]string{"EXTRA.example.test."})
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range hostAddresses() {
		found := false
		for _, have := range want.ips {
			if have.Equal(ip) {
				found = true
			}
		}
		if !found {
			t.Errorf("host address %s missing from %v", ip, want.ips)
		}
	}
	found := false
	for _, name := range want.dns {
		if name == "extra.example.test" {
			found = true
		}
	}
	if !found {
		t.Errorf("extra SAN not normalised into %v", want.dns)
	}
}
