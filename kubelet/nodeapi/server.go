package nodeapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"
)

// APIServerClientUser is the common name of the client certificate the API
// server presents to node APIs (Kubernetes' kube-apiserver-kubelet-client).
const APIServerClientUser = "skiff-apiserver-kubelet-client"

// TLSConfig is the node API's TLS configuration: the node's serving
// certificate, and a client certificate required from every caller,
// chaining to clientCA and naming one of allowedUsers (its common name).
// Anything else — no certificate, another CA, the admin's certificate — is
// refused in the handshake: only the API server talks to a node.
func TLSConfig(serving tls.Certificate, clientCA *x509.CertPool, allowedUsers ...string) (*tls.Config, error) {
	if clientCA == nil {
		return nil, errors.New("nodeapi: a client CA is required")
	}
	if len(allowedUsers) == 0 {
		return nil, errors.New("nodeapi: at least one allowed client user is required")
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{serving},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clientCA,
		// Streams upgrade HTTP/1.1 connections (SPDY, WebSocket).
		NextProtos: []string{"http/1.1"},
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("nodeapi: client certificate required")
			}
			if cn := cs.PeerCertificates[0].Subject.CommonName; !slices.Contains(allowedUsers, cn) {
				return fmt.Errorf("nodeapi: client %q may not use the node API", cn)
			}
			return nil
		},
	}, nil
}

// Serve runs handler over TLS on l until ctx ends.
func Serve(ctx context.Context, l net.Listener, cfg *tls.Config, handler http.Handler, log *slog.Logger) error {
	srv := &http.Server{
		Handler:           handler,
		TLSConfig:         cfg,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(l, "", "") }()
	select {
	case err := <-errc:
		return fmt.Errorf("node API: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		_ = srv.Close()
	}
	return nil
}
