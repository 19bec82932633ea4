package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// trimChunk is how many revisions one trimming transaction considers, so that
// compaction never holds the write lock for long (kine's multi-second stalls
// came from doing it all at once).
const trimChunk = 2000

// ttlActor is recorded in history for deletions by TTL expiry.
const ttlActor = "system:skiff:ttl"

// compactLoop compacts on a schedule, keeping the newest CompactRetain
// revisions readable. Several servers may run it at once: raising the floor
// and trimming are idempotent and guarded by the meta row.
func (s *Store) compactLoop() {
	t := time.NewTicker(s.cfg.CompactInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		rev, err := s.Revision(s.ctx)
		if err == nil && rev-s.cfg.CompactRetain > 0 {
			err = s.Compact(s.ctx, rev-s.cfg.CompactRetain)
		}
		if err != nil && s.ctx.Err() == nil {
			s.log.Warn("scheduled compaction failed", "err", err)
		}
	}
}

// Compact raises the compaction floor to revision: reads and watches of older
// revisions then fail with ErrCompacted. It then trims history rows that are
// neither needed above the floor nor within HistoryRetention. Current state is
// never touched.
func (s *Store) Compact(ctx context.Context, revision int64) error {
	newest, compact, err := s.meta(ctx, s.d.readDB())
	if err != nil {
		return s.wrap("compact", err)
	}
	if revision > newest {
		return fmt.Errorf("%w: compact to %d (newest is %d)", ErrFutureRevision, revision, newest)
	}
	if revision > compact {
		_, err := s.d.writeDB().ExecContext(ctx, s.d.rebind(`UPDATE meta SET compact_revision = ? WHERE id = 1 AND compact_revision < ?`), revision, revision)
		if err != nil {
			return s.wrap("compact", err)
		}
		s.log.Info("compacted", "revision", revision)
	}
	return s.trim(ctx)
}

// trim deletes history rows that no reader can need and no auditor keeps:
//   - a row superseded by a newer row of its key at or below the floor (the
//     newer row's prev_revision points at it), and
//   - a delete at or below the floor (the key is simply absent there).
//
// Each history row is visited once, as the "newer row", in revision order
// behind a watermark (meta.trimmed_revision); rows younger than
// HistoryRetention are left for a later pass by not advancing past them.
// A live key's newest row is never superseded, so it is never trimmed: it is
// where the key's current value is stored (see selectCurrent).
func (s *Store) trim(ctx context.Context) error {
	cutoff := s.d.timeArg(time.Now().Add(-s.cfg.HistoryRetention))
	for ctx.Err() == nil {
		var floor, trimmed int64
		db := s.d.writeDB()
		if err := db.QueryRowContext(ctx, `SELECT compact_revision, trimmed_revision FROM meta WHERE id = 1`).Scan(&floor, &trimmed); err != nil {
			return s.wrap("trim", err)
		}
		// The newest revision that is both below the floor and old enough.
		var oldEnough sql.NullInt64
		if err := db.QueryRowContext(ctx, s.d.rebind(`SELECT MAX(revision) FROM history WHERE revision > ? AND revision <= ? AND at < ?`),
			trimmed, min(floor, trimmed+trimChunk), cutoff).Scan(&oldEnough); err != nil {
			return s.wrap("trim", err)
		}
		if !oldEnough.Valid {
			return nil
		}
		hi := oldEnough.Int64
		done, err := s.trimRange(ctx, trimmed, hi)
		if err != nil {
			return s.wrap("trim", err)
		}
		if !done {
			return nil // another server trimmed this range first
		}
	}
	return ctx.Err()
}

func (s *Store) trimRange(ctx context.Context, lo, hi int64) (bool, error) {
	tx, err := s.d.writeDB().BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, s.d.rebind(`UPDATE meta SET trimmed_revision = ? WHERE id = 1 AND trimmed_revision = ?`), hi, lo)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, s.d.rebind(`DELETE FROM history WHERE revision IN
		(SELECT prev_revision FROM history WHERE revision > ? AND revision <= ? AND prev_revision > 0)`), lo, hi); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, s.d.rebind(`DELETE FROM history WHERE revision > ? AND revision <= ? AND op = 'delete'`), lo, hi); err != nil {
		return false, err
	}
	return true, tx.Commit()
}

// ttlLoop deletes expired keys through the ordinary write path, with CAS on
// the revision that was seen expired: a key rewritten meanwhile survives, and
// when several servers sweep at once exactly one delete succeeds.
func (s *Store) ttlLoop() {
	t := time.NewTicker(s.cfg.TTLSweepInterval)
	defer t.Stop()
	ctx := WithActor(s.ctx, ttlActor)
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		if err := s.sweepExpired(ctx); err != nil && s.ctx.Err() == nil {
			s.log.Warn("TTL sweep failed", "err", err)
		}
	}
}

func (s *Store) sweepExpired(ctx context.Context) error {
	rows, err := s.d.readDB().QueryContext(ctx, s.q.expired, time.Now().UnixMilli(), 1000)
	if err != nil {
		return s.wrap("ttl sweep", err)
	}
	type expired struct {
		key string
		rev int64
	}
	var keys []expired
	for rows.Next() {
		var e expired
		if err := rows.Scan(&e.key, &e.rev); err != nil {
			rows.Close()
			return s.wrap("ttl sweep", err)
		}
		keys = append(keys, e)
	}
	rows.Close()
	for _, e := range keys {
		_, _, err := s.Delete(ctx, e.key, e.rev)
		if err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return nil
}
