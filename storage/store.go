package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/skiffkube/skiff/migrations"
)

// Store is the revisioned key-value store. It is safe for concurrent use; one
// Store per process per database (several processes may share a PostgreSQL
// database, each with its own Store).
type Store struct {
	cfg    Config
	log    *slog.Logger
	d      dialect
	sealer *sealer
	q      queries

	writes chan *writeOp
	hub    *hub
	cache  *listCache
	// metrics are the store's Prometheus collectors (see metrics.go).
	metrics *storeMetrics
	// getStmt and metaStmt are getCurrent and selectMeta prepared on the
	// read pool.
	getStmt, metaStmt *sql.Stmt
	refill            chan struct{} // asks refillLoop to rebuild an invalidated cache

	ctx    context.Context // cancelled by Close: stops the background loops
	cancel context.CancelFunc
	wg     sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// queries holds the shared SQL rebound for the dialect, computed once.
type queries struct {
	getCurrent, listFrom, listAfter, listFromUnchanged, listAfterUnchanged string
	keysChanged, historyAt, readEvents, updateMeta, expired, notify        string
	selectMeta, lockMeta                                                   string
}

// New opens the database named by cfg.Endpoint, applies migrations and starts
// the background loops (group-commit writer, watch poller, compactor, TTL
// sweeper). Close releases everything.
func New(ctx context.Context, cfg Config) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	sl, err := newSealer(cfg.EncryptionKey)
	if err != nil {
		return nil, err
	}
	var d dialect
	if IsPostgres(cfg.Endpoint) {
		d, err = openPostgres(ctx, cfg.Endpoint, cfg.MaxOpenConns, cfg.Logger)
	} else {
		d, err = openSQLite(ctx, cfg.Endpoint)
	}
	if err != nil {
		return nil, err
	}
	version, err := migrations.Apply(ctx, d.writeDB(), d.migrations(), cfg.Logger)
	if err != nil {
		d.close()
		return nil, fmt.Errorf("storage: %s: %w", d.name(), d.translate(err))
	}
	s := &Store{cfg: cfg, log: cfg.Logger.With("component", "storage", "dialect", d.name()), d: d, sealer: sl}
	s.q = queries{
		getCurrent: d.rebind(getCurrent), listFrom: d.rebind(listCurrentFrom), listAfter: d.rebind(listCurrentAfter),
		listFromUnchanged: d.rebind(listCurrentFromUnchanged), listAfterUnchanged: d.rebind(listCurrentAfterUnchanged),
		keysChanged: d.rebind(keysChangedSince), historyAt: d.rebind(historyAtOrBefore), readEvents: d.rebind(readEvents),
		expired:    d.rebind(expiredKeys),
		selectMeta: selectMeta,
	}
	// The two hottest reads (every Get, and every list's revision check)
	// are prepared once per connection instead of parsed on every call.
	if s.getStmt, err = d.readDB().PrepareContext(ctx, s.q.getCurrent); err == nil {
		s.metaStmt, err = d.readDB().PrepareContext(ctx, s.q.selectMeta)
	}
	if err != nil {
		d.close()
		return nil, fmt.Errorf("storage: preparing reads: %w", d.translate(err))
	}
	rev, _, err := s.meta(ctx, d.readDB())
	if err != nil {
		d.close()
		return nil, fmt.Errorf("storage: reading revision: %w", d.translate(err))
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.writes = make(chan *writeOp, maxBatchOps)
	s.hub = newHub(s, rev)
	s.metrics = newStoreMetrics(s)
	s.cache = newListCache(cfg.ListCacheBytes, cfg.ListCacheSkip, s.log.Warn)
	s.refill = make(chan struct{}, 1)
	if err := s.fillListCache(ctx); err != nil {
		// Not fatal: lists read the database (and report the problem, e.g.
		// a secret that cannot be decrypted) until a later refill works.
		s.log.Warn("list cache not loaded; lists read the database until it is", "err", err)
		s.refillLater()
	}
	s.goLoop(s.writeLoop)
	s.goLoop(s.refillLoop)
	s.goLoop(s.hub.pollLoop)
	s.goLoop(func() { d.background(s.ctx, s.hub.wakeUp) })
	if cfg.CompactInterval > 0 {
		s.goLoop(s.compactLoop)
	}
	s.goLoop(s.ttlLoop)
	s.log.Info("store open", "schema", version, "revision", rev)
	return s, nil
}

func (s *Store) goLoop(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// Close stops the background loops, fails pending writes with ErrClosed, ends
// every watch and closes the database.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.cancel()
		s.wg.Wait()
		s.hub.closeAll(ErrClosed)
		s.getStmt.Close()
		s.metaStmt.Close()
		s.closeErr = s.d.close()
	})
	return s.closeErr
}

// Dialect names the database kind: "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.d.name() }

// DB exposes the underlying database for read-only operator tooling (history
// queries, backups). The apiserver never uses it.
func (s *Store) DB() *sql.DB { return s.d.readDB() }

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (s *Store) meta(ctx context.Context, q querier) (rev, compact int64, err error) {
	err = q.QueryRowContext(ctx, s.q.selectMeta).Scan(&rev, &compact)
	return rev, compact, err
}

// Revision returns the newest committed revision.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	var rev, compact int64
	err := s.metaStmt.QueryRowContext(ctx).Scan(&rev, &compact)
	return rev, s.wrap("read revision", err)
}

// CompactRevision returns the compaction floor: revisions at or below it can
// no longer be read or watched from.
func (s *Store) CompactRevision(ctx context.Context) (int64, error) {
	_, c, err := s.meta(ctx, s.d.readDB())
	return c, s.wrap("read compact revision", err)
}

// wrap names the operation in database errors and leaves store errors alone.
func (s *Store) wrap(op string, err error) error {
	if err == nil || isStoreError(err) {
		return err
	}
	if s.ctx.Err() != nil {
		return fmt.Errorf("storage: %s: %w", op, ErrClosed)
	}
	return fmt.Errorf("storage: %s: %w", op, s.d.translate(err))
}

func isStoreError(err error) bool {
	for _, e := range []error{ErrKeyExists, ErrNotFound, ErrConflict, ErrCompacted, ErrFutureRevision, ErrInvalidKey, ErrValueTooLarge, ErrClosed, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// scanKV reads a row of currentColumns; the value is still sealed.
func scanKV(sc interface{ Scan(...any) error }) (*KeyValue, error) {
	var kv KeyValue
	var exp sql.NullInt64
	if err := sc.Scan(&kv.Key, &kv.Value, &kv.CreateRevision, &kv.ModRevision, &kv.Version, &exp); err != nil {
		return nil, err
	}
	kv.ExpiresAt = msTime(exp)
	return &kv, nil
}

func msTime(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMilli(v.Int64)
}

func timeMs(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMilli(), Valid: true}
}

// opened returns kv with its value decrypted.
func (s *Store) opened(kv *KeyValue) (*KeyValue, error) {
	if kv == nil || !encrypted(kv.Key) {
		return kv, nil
	}
	v, err := s.sealer.open(kv.Key, kv.Value)
	if err != nil {
		return nil, err
	}
	c := *kv
	c.Value = v
	return &c, nil
}
