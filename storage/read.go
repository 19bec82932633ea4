package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"
)

// Get returns a key's state now (revision 0) or at an older revision that has
// not been compacted.
func (s *Store) Get(ctx context.Context, key string, revision int64) (*KeyValue, error) {
	if err := validateKey(key, s.cfg.MaxKeyBytes); err != nil {
		return nil, err
	}
	if revision == 0 {
		kv, err := scanKV(s.getStmt.QueryRowContext(ctx, key))
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
		}
		if err != nil {
			return nil, s.wrap("get", err)
		}
		return s.opened(kv)
	}
	var out *KeyValue
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		if _, err := s.checkRevision(ctx, tx, revision); err != nil {
			return err
		}
		kv, err := s.stateAt(ctx, tx, key, revision)
		if err != nil {
			return err
		}
		if kv == nil {
			return fmt.Errorf("%w: %s at revision %d", ErrNotFound, key, revision)
		}
		out, err = s.opened(kv)
		return err
	})
	return out, err
}

// CachedGetter is a store that can answer a read from its list cache,
// possibly a moment behind the database (*Store is one); callers holding a
// narrower store interface test for it.
type CachedGetter interface {
	GetCached(key string) (kv *KeyValue, found, ok bool)
}

// GetCached returns a key's state from the list cache, which may be a
// little behind the database (found is false for a key it does not hold);
// ok is false when the cache cannot answer. It is for optimistic
// read-modify-write: the write's compare-and-swap catches a stale read, and
// the caller then reads with Get.
func (s *Store) GetCached(key string) (kv *KeyValue, found, ok bool) {
	return s.cache.get(key)
}

// List returns one page of the keys under a prefix, in key order, all as of
// one revision.
func (s *Store) List(ctx context.Context, opts ListOptions) (*ListResult, error) {
	if err := validatePrefix(opts.Prefix, s.cfg.MaxKeyBytes); err != nil {
		return nil, err
	}
	if opts.Limit < 0 {
		return nil, fmt.Errorf("storage: negative list limit %d", opts.Limit)
	}
	if out, ok := s.listFromCache(ctx, opts); ok {
		return out, nil
	}
	return s.listDB(ctx, opts)
}

// listDB reads a page from the database.
func (s *Store) listDB(ctx context.Context, opts ListOptions) (*ListResult, error) {
	if cl, ok := s.d.(currentLister); ok && opts.Revision == 0 {
		return s.listNewest(ctx, cl, opts)
	}
	var out *ListResult
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		newest, err := s.checkRevision(ctx, tx, opts.Revision)
		if err != nil {
			return err
		}
		at := opts.Revision
		if at == 0 {
			at = newest
		}
		kvs, more, err := s.listAt(ctx, tx, opts, at, at == newest)
		if err != nil {
			return err
		}
		for i, kv := range kvs {
			if kvs[i], err = s.opened(kv); err != nil {
				return err
			}
		}
		out = &ListResult{KVs: kvs, Revision: at, More: more}
		return nil
	})
	return out, err
}

// cacheWait bounds how long a list waits for the list cache to catch up with
// the database before it reads the database instead. The wait is normally
// one poll: the list wakes the hub's poller.
const cacheWait = time.Second

// listFromCache serves a page from the list cache when it can (see
// listcache.go for why that is linearizable).
func (s *Store) listFromCache(ctx context.Context, opts ListOptions) (*ListResult, bool) {
	if !s.cache.usable() {
		return nil, false
	}
	lo, hi := prefixRange(opts.Prefix)
	if opts.Revision == 0 && !opts.AnyRevision {
		newest, err := s.Revision(ctx)
		if err != nil || !s.cache.waitFor(ctx, newest, s.hub.wakeUp, cacheWait) {
			return nil, false
		}
	}
	kvs, rev, more, ok := s.cache.list(lo, hi, opts.StartAfter, opts.Limit, opts.Revision)
	if !ok {
		return nil, false
	}
	return &ListResult{KVs: kvs, Revision: rev, More: more}, true
}

// fillListCache loads the list cache from a snapshot of the whole current
// state. It retries while writes race past what the hub's ring holds.
func (s *Store) fillListCache(ctx context.Context) error {
	if s.cache.limit < 0 {
		return nil
	}
	for attempt := 0; ; attempt++ {
		all, err := s.listDB(ctx, ListOptions{})
		if err != nil {
			return err
		}
		if s.cache.fill(s.hub, all.KVs, all.Revision) {
			return nil
		}
		if attempt == 10 {
			s.log.Warn("list cache not loaded: writes keep outpacing the snapshot; lists read the database")
			return nil
		}
	}
}

// refillLoop rebuilds the list cache after the hub invalidated it.
func (s *Store) refillLoop() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.refill:
		}
		if err := s.fillListCache(s.ctx); err != nil && s.ctx.Err() == nil {
			s.log.Warn("list cache refill failed; lists read the database until the next try", "err", err)
			s.refillLater()
		}
	}
}

// refillLater asks for a refill after a pause (a failed fill read the whole
// state; don't repeat that at once).
func (s *Store) refillLater() {
	time.AfterFunc(10*s.cfg.PollInterval, s.requestRefill)
}

func (s *Store) requestRefill() {
	select {
	case s.refill <- struct{}{}:
	default:
	}
}

// currentLister is implemented by dialects that can read the newest revision
// and one page of the current state in one snapshot faster than a
// database/sql transaction (PostgreSQL: one pipelined round trip).
type currentLister interface {
	listCurrent(ctx context.Context, q string, args []any) (newest, compact int64, kvs []*KeyValue, err error)
}

// listNewest is List at the newest revision through a currentLister.
func (s *Store) listNewest(ctx context.Context, cl currentLister, opts ListOptions) (*ListResult, error) {
	q, args, limit, ok := s.rangeQuery(opts, 0, true)
	if !ok {
		rev, err := s.Revision(ctx)
		if err != nil {
			return nil, err
		}
		return &ListResult{Revision: rev}, nil
	}
	newest, _, kvs, err := cl.listCurrent(ctx, q, args)
	if err != nil {
		return nil, s.wrap("list", err)
	}
	more := false
	if limit > 0 && len(kvs) > limit {
		kvs, more = kvs[:limit], true
	}
	for i, kv := range kvs {
		if kvs[i], err = s.opened(kv); err != nil {
			return nil, s.wrap("list", err)
		}
	}
	return &ListResult{KVs: kvs, Revision: newest, More: more}, nil
}

// readTx runs f in a read-only transaction: one snapshot for all its queries.
func (s *Store) readTx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.d.readDB().BeginTx(ctx, s.d.readTxOptions())
	if err != nil {
		return s.wrap("begin read", err)
	}
	defer tx.Rollback()
	return s.wrap("read", f(tx))
}

// checkRevision returns the newest revision and fails if revision (when not
// 0) is compacted or in the future.
func (s *Store) checkRevision(ctx context.Context, tx *sql.Tx, revision int64) (int64, error) {
	newest, compact, err := s.meta(ctx, tx)
	if err != nil {
		return 0, err
	}
	switch {
	case revision == 0:
	case revision < 0:
		return 0, fmt.Errorf("storage: negative revision %d", revision)
	case revision < compact:
		return 0, fmt.Errorf("%w: revision %d (compacted up to %d)", ErrCompacted, revision, compact)
	case revision > newest:
		return 0, fmt.Errorf("%w: revision %d (newest is %d)", ErrFutureRevision, revision, newest)
	}
	return newest, nil
}

// listAt reads a page as of revision at. At the newest revision that is one
// index range of kv. At an older one it is still mostly that range (the keys
// not written since), merged with the state at "at" of the few keys written
// since, read from history.
func (s *Store) listAt(ctx context.Context, tx *sql.Tx, opts ListOptions, at int64, newest bool) ([]*KeyValue, bool, error) {
	q, args, limit, ok := s.rangeQuery(opts, at, newest)
	if !ok {
		return nil, false, nil
	}
	lo, hi := prefixRange(opts.Prefix)
	kvs, err := collectKVs(tx.QueryContext(ctx, q, args...))
	if err != nil {
		return nil, false, err
	}
	if !newest {
		changed, err := s.changedStates(ctx, tx, lo, hi, opts.StartAfter, at)
		if err != nil {
			return nil, false, err
		}
		if len(changed) > 0 {
			kvs = append(kvs, changed...)
			sort.Slice(kvs, func(i, j int) bool { return kvs[i].Key < kvs[j].Key })
		}
	}
	if limit > 0 && len(kvs) > limit {
		return kvs[:limit], true, nil
	}
	return kvs, false, nil
}

// rangeQuery builds the query for one page of opts' range of kv: all of it
// at the newest revision, else the keys not written after revision at. It
// fetches one row more than the limit, so the caller can tell there is more.
// ok is false when the range is empty (StartAfter past its end).
func (s *Store) rangeQuery(opts ListOptions, at int64, newest bool) (q string, args []any, limit int, ok bool) {
	lo, hi := prefixRange(opts.Prefix)
	after := opts.StartAfter != "" && opts.StartAfter >= lo
	if opts.StartAfter >= hi {
		return "", nil, 0, false
	}
	limit = opts.Limit
	fetch := int64(math.MaxInt64) // no limit (both dialects accept a huge LIMIT)
	if limit > 0 {
		fetch = int64(limit) + 1
	}
	args = []any{lo, hi}
	if after {
		args[0] = opts.StartAfter
	}
	switch {
	case newest && after:
		q = s.q.listAfter
	case newest:
		q = s.q.listFrom
	case after:
		q, args = s.q.listAfterUnchanged, append(args, at)
	default:
		q, args = s.q.listFromUnchanged, append(args, at)
	}
	return q, append(args, fetch), limit, true
}

// changedStates returns, for every key in [lo, hi) after startAfter written
// after revision at, its state at "at" (keys that did not exist are left out).
func (s *Store) changedStates(ctx context.Context, tx *sql.Tx, lo, hi, startAfter string, at int64) ([]*KeyValue, error) {
	rows, err := tx.QueryContext(ctx, s.q.keysChanged, at, lo, hi)
	if err != nil {
		return nil, err
	}
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return nil, err
		}
		if k > startAfter {
			keys = append(keys, k)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []*KeyValue
	for _, k := range keys {
		kv, err := s.stateAt(ctx, tx, k, at)
		if err != nil {
			return nil, err
		}
		if kv != nil {
			out = append(out, kv)
		}
	}
	return out, nil
}

// stateAt returns a key's (sealed) state at revision at, or nil if it did not
// exist then.
func (s *Store) stateAt(ctx context.Context, tx *sql.Tx, key string, at int64) (*KeyValue, error) {
	var op string
	var value []byte
	var exp sql.NullInt64
	kv := &KeyValue{Key: key}
	err := tx.QueryRowContext(ctx, s.q.historyAt, key, at).Scan(&op, &value, &kv.CreateRevision, &kv.ModRevision, &kv.Version, &exp)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && op == "delete") {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	kv.Value, kv.ExpiresAt = value, msTime(exp)
	return kv, nil
}

func collectKVs(rows *sql.Rows, err error) ([]*KeyValue, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var kvs []*KeyValue
	for rows.Next() {
		kv, err := scanKV(rows)
		if err != nil {
			return nil, err
		}
		kvs = append(kvs, kv)
	}
	return kvs, rows.Err()
}
