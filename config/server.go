package config

import (
	"io"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/skiffkube/skiff/apiserver/registry"
	"github.com/skiffkube/skiff/storage"
)

// Endpoint is the datastore endpoint to open: the PostgreSQL URL as given,
// or the absolute path of the SQLite file (<data-dir>/db/state.db when
// --datastore-endpoint is empty).
func (s *Server) Endpoint() string {
	ep := s.DatastoreEndpoint
	switch {
	case ep == "":
		return filepath.Join(s.DataDir, sqliteFile)
	case storage.IsPostgres(ep):
		return ep
	}
	ep = strings.TrimPrefix(ep, sqlitePrefix)
	if abs, err := filepath.Abs(ep); err == nil {
		return abs
	}
	return ep
}

// IsPostgres tells whether state is kept in PostgreSQL.
func (s *Server) IsPostgres() bool {
	return storage.IsPostgres(s.DatastoreEndpoint)
}

// RedactedEndpoint is Endpoint with any password replaced, for logs.
func (s *Server) RedactedEndpoint() string {
	ep := s.Endpoint()
	if !s.IsPostgres() {
		return ep
	}
	u, err := url.Parse(ep)
	if err != nil {
		return "postgres://(unparsable)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// ListenAddress is host:port for the API server's listener.
func (s *Server) ListenAddress() string {
	return net.JoinHostPort(s.BindAddress, strconv.Itoa(s.HTTPSListenPort))
}

// StorageConfig is the store's configuration. It carries the encryption key,
// so call it after Prepare; before, storage.New rejects the missing key.
func (s *Server) StorageConfig(log *slog.Logger) storage.Config {
	compact := s.CompactInterval
	if compact == 0 {
		compact = -1 // storage: negative disables, zero means its default
	}
	return storage.Config{
		Endpoint:         s.Endpoint(),
		EncryptionKey:    s.encryptionKey,
		PollInterval:     s.DatastorePollInterval,
		MaxOpenConns:     s.DatastoreMaxConns,
		CompactInterval:  compact,
		CompactRetain:    s.CompactRetain,
		HistoryRetention: s.HistoryRetention,
		// Events are most of the writes and hardly ever listed: they stay
		// out of the list cache's memory, as Kubernetes keeps them out of
		// its watch cache.
		ListCacheSkip: []string{registry.EventsKeyPrefix},
		Logger:        log,
	}
}

// NewLogger builds the process logger from --log-level and --log-format.
func (s *Server) NewLogger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: s.LogLevel}
	if s.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
