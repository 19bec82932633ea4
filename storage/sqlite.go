package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/skiffkube/skiff/migrations"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteTimeLayout is fixed-width so that history.at sorts as text.
const sqliteTimeLayout = "2006-01-02T15:04:05.000000000Z"

type sqliteDialect struct {
	path   string
	writer *sql.DB // one connection, BEGIN IMMEDIATE: SQLite has one writer
	reader *sql.DB // several connections; WAL lets them read while writing
	// checkpointer copies the WAL into the database file in the background.
	checkpointer *sql.DB
	lock         *os.File

	// prepared holds the write path's statements, prepared on the writer
	// connection: a few dozen texts (see stmt.pieces, writePathTexts).
	prepMu   sync.Mutex
	prepared map[string]*sql.Stmt
}

// openSQLite opens (creating if needed) the database file. A file lock beside
// it makes sure a single skiff server uses it: SQLite is the single-node mode.
func openSQLite(ctx context.Context, endpoint string) (*sqliteDialect, error) {
	path := strings.TrimPrefix(endpoint, "sqlite://")
	if path == "" {
		return nil, fmt.Errorf("storage: empty SQLite path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("storage: creating the directory of %s: %w", path, err)
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("storage: opening lock file: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("storage: %s is in use by another skiff process (lock %s.lock held): %w", path, path, err)
	}
	d := &sqliteDialect{path: path, lock: lock}
	// busy_timeout covers WAL checkpoints and any other short lock; with one
	// writer connection per file the store itself never contends for writes.
	pragmas := "_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(OFF)" +
		"&_pragma=cache_size(-8192)&_pragma=mmap_size(268435456)&_pragma=temp_store(MEMORY)"
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + pragmas
	d.writer, err = sql.Open("sqlite", dsn+"&_txlock=immediate&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		d.close()
		return nil, fmt.Errorf("storage: opening %s: %w", path, err)
	}
	d.writer.SetMaxOpenConns(1)
	d.writer.SetMaxIdleConns(1)
	d.writer.SetConnMaxLifetime(0)
	d.reader, err = sql.Open("sqlite", dsn+"&_pragma=query_only(1)")
	if err != nil {
		d.close()
		return nil, fmt.Errorf("storage: opening %s: %w", path, err)
	}
	d.reader.SetMaxOpenConns(8)
	d.reader.SetMaxIdleConns(8)
	d.checkpointer, err = sql.Open("sqlite", dsn)
	if err != nil {
		d.close()
		return nil, fmt.Errorf("storage: opening %s: %w", path, err)
	}
	d.checkpointer.SetMaxOpenConns(1)
	// The first statement is where a foreign or corrupt file shows itself.
	var mode string
	if err := d.writer.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		d.close()
		return nil, fmt.Errorf("storage: %s: %w", path, d.translate(err))
	}
	var check string
	if err := d.writer.QueryRowContext(ctx, "PRAGMA quick_check(1)").Scan(&check); err != nil || check != "ok" {
		d.close()
		if err == nil {
			err = errors.New(check)
		}
		return nil, fmt.Errorf("storage: %s failed SQLite's integrity check (restore a backup): %w", path, d.translate(err))
	}
	return d, nil
}

// prepareWritePath prepares the write path's statements on the writer
// connection, once, before the first write transaction (inside one the
// only connection is taken). A text that fails to prepare is left out:
// txStmt then runs it unprepared, and the transaction reports the error.
func (d *sqliteDialect) prepareWritePath(ctx context.Context) {
	d.prepMu.Lock()
	defer d.prepMu.Unlock()
	if d.prepared != nil {
		return
	}
	d.prepared = map[string]*sql.Stmt{}
	for _, text := range writePathTexts() {
		if ps, err := d.writer.PrepareContext(ctx, text); err == nil {
			d.prepared[text] = ps
		}
	}
}

// txStmt is query for use in tx: prepared once if it is one of the write
// path's, else as it is.
func (d *sqliteDialect) txStmt(ctx context.Context, tx *sql.Tx, query string) interface {
	ExecContext(ctx context.Context, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, args ...any) *sql.Row
} {
	d.prepMu.Lock()
	ps, ok := d.prepared[query]
	d.prepMu.Unlock()
	if !ok {
		return unpreparedStmt{tx, query}
	}
	return tx.StmtContext(ctx, ps)
}

// unpreparedStmt runs a query through tx as it is.
type unpreparedStmt struct {
	tx    *sql.Tx
	query string
}

func (u unpreparedStmt) ExecContext(ctx context.Context, args ...any) (sql.Result, error) {
	return u.tx.ExecContext(ctx, u.query, args...)
}

func (u unpreparedStmt) QueryContext(ctx context.Context, args ...any) (*sql.Rows, error) {
	return u.tx.QueryContext(ctx, u.query, args...)
}

func (u unpreparedStmt) QueryRowContext(ctx context.Context, args ...any) *sql.Row {
	return u.tx.QueryRowContext(ctx, u.query, args...)
}

func (d *sqliteDialect) name() string                   { return "sqlite" }
func (d *sqliteDialect) migrations() migrations.Dialect { return migrations.SQLite }
func (d *sqliteDialect) writeDB() *sql.DB               { return d.writer }
func (d *sqliteDialect) readDB() *sql.DB                { return d.reader }
func (d *sqliteDialect) rebind(q string) string         { return q }
func (d *sqliteDialect) notifySQL() string              { return "" }
func (d *sqliteDialect) listen(context.Context, func()) {}
func (d *sqliteDialect) timeArg(t time.Time) any        { return t.UTC().Format(sqliteTimeLayout) }
func (d *sqliteDialect) readTxOptions() *sql.TxOptions  { return &sql.TxOptions{ReadOnly: true} }

// runBatch: BEGIN IMMEDIATE takes SQLite's write lock at once, which is the
// meta lock here (one writer per file), so reading meta needs nothing more.
// Multi-row statements run in pieces whose texts are prepared once (see
// stmt.pieces): compiling each batch's statements anew cost more than
// running them.
func (d *sqliteDialect) runBatch(ctx context.Context, load stmt, plan planFunc) (bool, error) {
	d.prepareWritePath(ctx)
	tx, err := d.writer.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	var base, compact int64
	if err := d.txStmt(ctx, tx, selectMeta).QueryRowContext(ctx).Scan(&base, &compact); err != nil {
		return false, err
	}
	current := map[string]*KeyValue{}
	for _, piece := range load.pieces() {
		rows, err := d.txStmt(ctx, tx, piece.sql).QueryContext(ctx, piece.args...)
		if err != nil {
			return false, err
		}
		got, err := scanCurrent(rows.Next, rows.Scan)
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
		if err != nil {
			return false, err
		}
		maps.Copy(current, got)
	}
	stmts, err := plan(base, current)
	if err != nil || len(stmts) == 0 {
		return false, err
	}
	for _, st := range stmts {
		for _, piece := range st.pieces() {
			if _, err := d.txStmt(ctx, tx, piece.sql).ExecContext(ctx, piece.args...); err != nil {
				return false, err
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return true, err
	}
	return false, nil
}

// background checkpoints the WAL every second from its own connection, so
// that commits never pay for a checkpoint (wal_autocheckpoint is off on the
// writer). PASSIVE never blocks the writer or readers.
func (d *sqliteDialect) background(ctx context.Context, _ func()) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := d.checkpointer.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)"); err != nil && ctx.Err() == nil {
			slog.Default().Warn("SQLite WAL checkpoint failed", "path", d.path, "err", err)
		}
	}
}

func (d *sqliteDialect) parseTime(v any) (time.Time, error) {
	switch t := v.(type) {
	case string:
		return time.Parse(sqliteTimeLayout, t)
	case []byte:
		return time.Parse(sqliteTimeLayout, string(t))
	case time.Time:
		return t, nil
	}
	return time.Time{}, fmt.Errorf("unexpected time value %T", v)
}

func (d *sqliteDialect) translate(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("not a SQLite database (a foreign or corrupt file): %w", err)
		case sqlite3.SQLITE_CORRUPT:
			return fmt.Errorf("database file is corrupt (restore a backup): %w", err)
		case sqlite3.SQLITE_FULL:
			return fmt.Errorf("disk full: %w", err)
		}
	}
	return err
}

func (d *sqliteDialect) close() error {
	var errs []error
	if d.reader != nil {
		errs = append(errs, d.reader.Close())
	}
	if d.checkpointer != nil {
		// A last full checkpoint leaves a small WAL behind.
		d.checkpointer.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
		errs = append(errs, d.checkpointer.Close())
	}
	d.prepMu.Lock()
	for _, ps := range d.prepared {
		errs = append(errs, ps.Close())
	}
	d.prepared = nil
	d.prepMu.Unlock()
	if d.writer != nil {
		errs = append(errs, d.writer.Close())
	}
	if d.lock != nil {
		errs = append(errs, d.lock.Close())
	}
	return errors.Join(errs...)
}
