package storage

import (
	"context"
	"database/sql"
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
func (d *postgresDialect) lockMetaSQL() string            { return selectMeta + " FOR UPDATE" }

// execWrites folds the statements into one: each but the last becomes a
// data-modifying CTE (PostgreSQL runs those exactly once), the last (the meta
// update) is the main statement and returns pg_notify, which is delivered at
// commit. One network round trip instead of four or five.
func (d *postgresDialect) execWrites(ctx context.Context, tx *sql.Tx, stmts []stmt, revision string) error {
	var b strings.Builder
	var args []any
	for i, st := range stmts[:len(stmts)-1] {
		if i == 0 {
			b.WriteString("WITH ")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "w%d AS (%s) ", i, st.sql)
		args = append(args, st.args...)
	}
	last := stmts[len(stmts)-1]
	b.WriteString(last.sql)
	b.WriteString(" RETURNING pg_notify('" + notifyChannel + "', ?)")
	args = append(args, last.args...)
	args = append(args, revision)
	_, err := tx.ExecContext(ctx, rebindDollar(b.String()), d.dynamicArgs(args)...)
	return err
}

// dynamicArgs sends a statement whose text varies from call to call (batch
// sizes) in one round trip without preparing it: preparing and caching each
// shape would cost a round trip and churn pgx's statement cache.
func (d *postgresDialect) dynamicArgs(args []any) []any {
	return append([]any{pgx.QueryExecModeExec}, args...)
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
func (d *postgresDialect) listen(ctx context.Context, wake func()) {
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
