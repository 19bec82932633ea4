package storage

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Defaults for the zero values of Config.
const (
	DefaultMaxValueBytes    = 3 << 20 // Kubernetes accepts request bodies up to 3 MiB
	DefaultMaxKeyBytes      = 2048
	DefaultPollInterval     = 1 * time.Second
	DefaultCompactInterval  = 5 * time.Minute
	DefaultCompactRetain    = 1000
	DefaultHistoryRetention = 24 * time.Hour
	DefaultMaxOpenConns     = 10
	DefaultWatchBuffer      = 1000
	DefaultWatchCache       = 10000
	DefaultWatchCacheBytes  = 32 << 20
	DefaultProgressInterval = 5 * time.Second
	DefaultTTLSweepInterval = 1 * time.Second
	DefaultListCacheBytes   = 256 << 20
)

// Config is everything New needs. Zero values take the defaults above; the
// endpoint and the encryption key are required.
type Config struct {
	// Endpoint is "postgres://…" / "postgresql://…" for PostgreSQL, or a path
	// to a SQLite file (optionally prefixed "sqlite://").
	Endpoint string
	// EncryptionKey (32 bytes, AES-256-GCM) encrypts the values of keys under
	// /registry/secrets/. It is kept outside the database.
	EncryptionKey []byte
	// MaxValueBytes rejects larger values with ErrValueTooLarge.
	MaxValueBytes int
	// MaxKeyBytes rejects longer keys with ErrInvalidKey.
	MaxKeyBytes int
	// PollInterval is how often the watch poller reads new revisions when no
	// local write or PostgreSQL notification woke it.
	PollInterval time.Duration
	// CompactInterval is how often the compactor runs; negative disables it.
	CompactInterval time.Duration
	// CompactRetain is how many of the newest revisions stay readable (watch
	// from, list at) after a scheduled compaction.
	CompactRetain int64
	// HistoryRetention is how long superseded history rows are kept for audit
	// even after compaction; the compaction floor does not delete them sooner.
	HistoryRetention time.Duration
	// MaxOpenConns bounds the PostgreSQL connection pool (plus one LISTEN
	// connection). SQLite ignores it.
	MaxOpenConns int
	// WatchBuffer is how many undelivered events a watcher may queue before it
	// is taken off the live stream, to catch up from the ring or history
	// once it has sent them.
	WatchBuffer int
	// WatchCache is how many recent events the hub keeps in memory so that new
	// watchers starting at a recent revision need no query.
	WatchCache int
	// WatchCacheBytes bounds the memory of that cache (values and previous
	// values); whichever bound is reached first evicts the oldest events.
	WatchCacheBytes int
	// ProgressInterval is how long a watch that asked for progress notices may
	// stay idle before it gets one.
	ProgressInterval time.Duration
	// ListCacheBytes bounds the in-memory mirror of the current state that
	// serves lists at the newest revision (see listcache.go). If the state
	// outgrows it the mirror is dropped and lists read the database; negative
	// disables the mirror.
	ListCacheBytes int
	// ListCacheSkip lists key prefixes the mirror leaves out: many
	// short-lived keys that are rarely listed (the API server's Events, which
	// Kubernetes keeps out of its watch cache too). Lists and cached reads
	// that reach them read the database.
	ListCacheSkip []string
	// TTLSweepInterval is how often expired keys are deleted.
	TTLSweepInterval time.Duration
	// Logger receives the store's logs; nil means slog.Default().
	Logger *slog.Logger
}

// IsPostgres tells whether an endpoint names a PostgreSQL database.
func IsPostgres(endpoint string) bool {
	return strings.HasPrefix(endpoint, "postgres://") || strings.HasPrefix(endpoint, "postgresql://")
}

func (c Config) withDefaults() (Config, error) {
	if c.Endpoint == "" {
		return c, fmt.Errorf("storage: Config.Endpoint is required")
	}
	if len(c.EncryptionKey) != 32 {
		return c, fmt.Errorf("storage: Config.EncryptionKey must be 32 bytes (AES-256), got %d", len(c.EncryptionKey))
	}
	setDefault(&c.MaxValueBytes, DefaultMaxValueBytes)
	setDefault(&c.MaxKeyBytes, DefaultMaxKeyBytes)
	setDefault(&c.PollInterval, DefaultPollInterval)
	setDefault(&c.CompactInterval, DefaultCompactInterval)
	setDefault(&c.CompactRetain, DefaultCompactRetain)
	setDefault(&c.HistoryRetention, DefaultHistoryRetention)
	setDefault(&c.MaxOpenConns, DefaultMaxOpenConns)
	setDefault(&c.WatchBuffer, DefaultWatchBuffer)
	setDefault(&c.WatchCache, DefaultWatchCache)
	setDefault(&c.WatchCacheBytes, DefaultWatchCacheBytes)
	setDefault(&c.ProgressInterval, DefaultProgressInterval)
	setDefault(&c.TTLSweepInterval, DefaultTTLSweepInterval)
	setDefault(&c.ListCacheBytes, DefaultListCacheBytes)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

func setDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v == 0 {
		*v = def
	}
}
