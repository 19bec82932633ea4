package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/skiffkube/skiff/apiserver"
	"github.com/skiffkube/skiff/apiserver/pki"
	"github.com/skiffkube/skiff/storage"
)

// server is an in-process API server on a fresh SQLite store.
type server struct {
	config *rest.Config
	store  *storage.Store
	stop   func()
}

// startServer builds the store, the certificates and the API server in dir
// and serves on a loopback port until stop.
func startServer(ctx context.Context, dir string) (*server, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	store, err := storage.New(ctx, storage.Config{Endpoint: filepath.Join(dir, "state.db"), EncryptionKey: key, Logger: quiet})
	if err != nil {
		return nil, fmt.Errorf("opening the store: %w", err)
	}
	bundle, err := pki.Ensure(filepath.Join(dir, "tls"), nil)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("certificates: %w", err)
	}
	srv, err := apiserver.New(apiserver.Config{
		Store: store, TLS: bundle.ServerTLSConfig(), ClientCA: bundle.CAPool(),
		BindAddress: "127.0.0.1:0", Logger: quiet, Collectors: []prometheus.Collector{store},
	})
	if err != nil {
		store.Close()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(runCtx) }()
	select {
	case <-srv.Ready():
	case err := <-done:
		cancel()
		store.Close()
		return nil, fmt.Errorf("starting the API server: %w", err)
	case <-time.After(30 * time.Second):
		cancel()
		store.Close()
		return nil, fmt.Errorf("the API server was not ready within 30s")
	}
	cfg := bundle.AdminRESTConfig(srv.URL())
	// The benchmark measures the server, not client-side throttling.
	cfg.QPS, cfg.Burst = -1, 0
	stop := func() {
		cancel()
		<-done
		store.Close()
	}
	return &server{config: cfg, store: store, stop: stop}, nil
}

// workDir returns dir, or a fresh temporary directory and its removal.
func workDir(dir string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, os.MkdirAll(dir, 0o755)
	}
	tmp, err := os.MkdirTemp("", "apibench-")
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}
