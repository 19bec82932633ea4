package nodeapi

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/skiffkube/skiff/apiserver/pki"
)

// startTLS serves the node API as a node does and returns its URL and the
// cluster PKI that signed everything.
func startTLS(t *testing.T) (string, *pki.Bundle) {
	t.Helper()
	b, err := pki.Ensure(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := TLSConfig(b.Serving, b.CAPool(), APIServerClientUser)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "default_web_app.log"), []byte("2026-11-30T05:00:01Z stdout F one\n"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, l, cfg, NewHandler(dirFinder(dir)), slogDiscard()) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return "https://" + l.Addr().String(), b
}

func clientFor(t *testing.T, b *pki.Bundle, user string) *http.Client {
	t.Helper()
	var certPEM, keyPEM []byte
	if user != "" {
		var err error
		if certPEM, keyPEM, err = b.IssueClientCert(user, nil, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := b.ClientTLSConfig(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

// Only the API server's client certificate opens the node API.
func TestNodeAPIAcceptsOnlyTheAPIServersCertificate(t *testing.T) {
	base, b := startTLS(t)
	get := func(c *http.Client) (string, error) {
		resp, err := c.Get(base + "/containerLogs/default/web/app")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body), nil
	}
	if body, err := get(clientFor(t, b, APIServerClientUser)); err != nil || body != "one\n" {
		t.Fatalf("API server client: %q %v", body, err)
	}
	for _, user := range []string{"", "admin"} {
		if body, err := get(clientFor(t, b, user)); err == nil {
			t.Errorf("client %q was served: %q", user, body)
		}
	}
	// A certificate from another CA is refused even with the right name.
	other, err := pki.Ensure(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, _ := other.IssueClientCert(APIServerClientUser, nil, time.Hour)
	pair, _ := tls.X509KeyPair(certPEM, keyPEM)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: b.CAPool(), Certificates: []tls.Certificate{pair}}}}
	if body, err := get(c); err == nil {
		t.Errorf("foreign CA's certificate was served: %q", body)
	}
}

// Port-forward over SPDY, as kubectl port-forward speaks it.
func TestPortForwardOverSPDY(t *testing.T) {
	base, b := startTLS(t)
	certPEM, keyPEM, err := b.IssueClientCert(APIServerClientUser, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	rc := &rest.Config{Host: base, TLSClientConfig: rest.TLSClientConfig{CertData: certPEM, KeyData: keyPEM, CAData: b.CAPEM}}
	rt, upgrader, err := spdy.RoundTripperFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(base + "/portForward/default/web")
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, "POST", u)
	stop, ready := make(chan struct{}), make(chan struct{})
	defer close(stop)
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:7007"}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-errc:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("port-forward not ready")
	}
	ports, err := fw.GetPorts()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", itoa(int(ports[0].Local))))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("hello pod"))
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	n, err := io.ReadAtLeast(conn, buf, len("HELLO POD"))
	if err != nil || !strings.Contains(string(buf[:n]), "HELLO POD") {
		t.Fatalf("echo %q (%v)", buf[:n], err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }
