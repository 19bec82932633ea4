package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/skiffkube/skiff/migrations"
)

// notifyChannel is the LISTEN/NOTIFY channel every write transaction signals.
const notifyChannel = "skiff_revision"

type postgresDialect struct {
	cfg *pgx.ConnConfig
	db  *sql.DB
	log *slog.Logger
}

func openPostgres(ctx context.Context, endpoint string, maxConns int, log *slog.Logger) (*postgresDialect, error) {
	cfg, err := pgx.ParseConfig(endpoint)
	if err != nil {
		return nil, fmt.Errorf("storage: invalid PostgreSQL endpoint: %w", err)
	}
	where := fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
	// Batches are SQL texts of a few dozen shapes (by batch size). Caching
	// their descriptions (not server-side prepared statements) costs one
	// round trip per new shape and lets values travel in binary: bytea in
	// the text format would be hex, twice the size.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	pingCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, fmt.Errorf("storage: cannot connect to PostgreSQL at %s as %q: %w", where, cfg.User, err)
	}
	return &postgresDialect{cfg: cfg, db: db, log: log}, nil
}

func (d *postgresDialect) name() string                   { return "postgres" }
func (d *postgresDialect) migrations() migrations.Dialect { return migrations.Postgres }
func (d *postgresDialect) writeDB() *sql.DB               { return d.db }
func (d *postgresDialect) readDB() *sql.DB                { return d.db }
func (d *postgresDialect) rebind(q string) string         { return rebindDollar(q) }

// runBatch pipelines the transaction in two round trips: [BEGIN, lock meta,
// read current rows] and then [write, COMMIT]. Each statement of a pipeline
// still runs after the previous one, with its own snapshot, so the rows are
// read after the lock is held. The writes are folded into one statement:
// every statement but the last becomes a data-modifying CTE (PostgreSQL runs
// those exactly once) and the last, the meta update, returns pg_notify,
// which is delivered at commit.
func (d *postgresDialect) runBatch(ctx context.Context, load stmt, plan planFunc) (atCommit bool, err error) {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		atCommit, err = d.pipelined(ctx, pc, load, plan)
		if err != nil && !atCommit && !pc.IsClosed() && pc.PgConn().TxStatus() != 'I' {
			if _, rerr := pc.Exec(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
				pc.Close(context.WithoutCancel(ctx))
			}
		}
		if pc.IsClosed() {
			// Let database/sql drop this connection; the error is ours.
			return errors.Join(driver.ErrBadConn, err)
		}
		return err
	})
	return atCommit, err
}

func (d *postgresDialect) pipelined(ctx context.Context, pc *pgx.Conn, load stmt, plan planFunc) (bool, error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(selectMeta + " FOR UPDATE")
	b.Queue(rebindDollar(load.sql), load.args...)
	br := pc.SendBatch(ctx, b)
	var base, compact int64
	_, err := br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&base, &compact)
	}
	var current map[string]*KeyValue
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			current, err = scanCurrent(rows.Next, rows.Scan)
			rows.Close()
			if err == nil {
				err = rows.Err()
			}
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, err
	}
	stmts, err := plan(base, current)
	if err != nil {
		return false, err
	}
	if len(stmts) == 0 {
		_, err := pc.Exec(ctx, "ROLLBACK")
		return false, err
	}
	var q strings.Builder
	var args []any
	for i, st := range stmts[:len(stmts)-1] {
		if i == 0 {
			q.WriteString("WITH ")
		} else {
			q.WriteString(", ")
		}
		fmt.Fprintf(&q, "w%d AS (%s) ", i, st.sql)
		args = append(args, st.args...)
	}
	last := stmts[len(stmts)-1]
	q.WriteString(last.sql)
	q.WriteString(" RETURNING pg_notify('" + notifyChannel + "', CAST(? AS TEXT))")
	args = append(args, last.args...)
	args = append(args, fmt.Sprint(last.args[0])) // the new revision
	b2 := &pgx.Batch{}
	b2.Queue(rebindDollar(q.String()), args...)
	b2.Queue("COMMIT")
	br2 := pc.SendBatch(ctx, b2)
	if _, err := br2.Exec(); err != nil {
		br2.Close()
		return false, err
	}
	if _, err := br2.Exec(); err != nil {
		br2.Close()
		return true, err
	}
	if err := br2.Close(); err != nil {
		return true, err
	}
	return false, nil
}

// listCurrent reads the meta row and one page of the current state in one
// round trip: BEGIN (repeatable read, so both statements share a snapshot),
// the two reads and COMMIT go out as one pipeline, and rows are scanned by
// pgx itself. On a 10,000-key list the client's time went mostly to
// database/sql (a driver.Value per column, each value copied twice) and to
// the four round trips of a database/sql transaction.
func (d *postgresDialect) listCurrent(ctx context.Context, q string, args []any) (newest, compact int64, kvs []*KeyValue, err error) {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return 0, 0, nil, err
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		b := &pgx.Batch{}
		b.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
		b.Queue(selectMeta).QueryRow(func(row pgx.Row) error { return row.Scan(&newest, &compact) })
		b.Queue(q, args...).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				kv, err := scanKV(rows)
				if err != nil {
					return err
				}
				kvs = append(kvs, kv)
			}
			return rows.Err()
		})
		b.Queue("COMMIT")
		err := pc.SendBatch(ctx, b).Close()
		if err != nil && !pc.IsClosed() && pc.PgConn().TxStatus() != 'I' {
			if _, rerr := pc.Exec(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
				pc.Close(context.WithoutCancel(ctx))
			}
		}
		if pc.IsClosed() {
			return errors.Join(driver.ErrBadConn, err)
		}
		return err
	})
	return newest, compact, kvs, err
}

func (d *postgresDialect) timeArg(t time.Time) any { return t.UTC() }
func (d *postgresDialect) readTxOptions() *sql.TxOptions {
	return &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead}
}

func (d *postgresDialect) parseTime(v any) (time.Time, error) {
	if t, ok := v.(time.Time); ok {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("unexpected time value %T", v)
}

func (d *postgresDialect) translate(err error) error { return err }

// listen keeps one dedicated connection LISTENing. Any notification, and every
// reconnection (notifications sent while disconnected are lost), wakes the
// watch poller; the poller's ticker covers the rest.
func (d *postgresDialect) background(ctx context.Context, wake func()) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := d.listenOnce(ctx, wake, func() { backoff = 100 * time.Millisecond })
		if ctx.Err() != nil {
			return
		}
		d.log.Warn("PostgreSQL LISTEN connection lost; reconnecting", "err", err, "after", backoff)
		wake()
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (d *postgresDialect) listenOnce(ctx context.Context, wake func(), connected func()) error {
	conn, err := pgx.ConnectConfig(ctx, d.cfg.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	connected()
	wake() // catch up on anything committed while we were not listening
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		wake()
	}
}

func (d *postgresDialect) close() error { return d.db.Close() }
