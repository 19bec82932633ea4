package storage

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"

	"github.com/skiffkube/skiff/migrations"
)

// dialect is everything that differs between SQLite and PostgreSQL. The SQL
// the store runs is shared and written with "?" placeholders; a dialect
// rebinds it, opens its pools and knows its own locking and errors.
type dialect interface {
	// name is used in logs and errors.
	name() string
	migrations() migrations.Dialect
	// writeDB runs write transactions; readDB runs reads. They may be the same.
	writeDB() *sql.DB
	readDB() *sql.DB
	// rebind turns "?" placeholders into the dialect's own.
	rebind(q string) string
	// runBatch runs one write transaction: it locks the meta row (held until
	// COMMIT: this orders the transaction's revisions after every committed
	// one and before every later one), reads the revision and then the
	// current rows selected by load (after the lock, so no later
	// commit is missed), asks plan for the statements to run, runs them and
	// commits. No statements: it rolls back. atCommit reports that an error
	// happened at COMMIT, when the outcome is unknown.
	runBatch(ctx context.Context, load stmt, plan planFunc) (atCommit bool, err error)
	// readTxOptions give a read-only transaction with one snapshot.
	readTxOptions() *sql.TxOptions
	// timeArg and parseTime convert history's "at" column.
	timeArg(t time.Time) any
	parseTime(v any) (time.Time, error)
	// background runs the dialect's own upkeep until ctx ends, calling wake
	// whenever another process may have committed (PostgreSQL LISTEN;
	// SQLite checkpoints its WAL here, off the commit path).
	background(ctx context.Context, wake func())
	// translate maps driver errors to clearer ones (e.g. "not a database").
	translate(err error) error
	close() error
}

// planFunc turns the base revision and the current rows of a batch's keys
// into the statements that write it (the last one updates meta).
type planFunc func(base int64, current map[string]*KeyValue) ([]stmt, error)

// scanCurrent reads rows of currentColumns into a map by key.
func scanCurrent(next func() bool, scan func(...any) error) (map[string]*KeyValue, error) {
	current := map[string]*KeyValue{}
	for next() {
		kv, err := scanKV(scanFunc(scan))
		if err != nil {
			return nil, err
		}
		current[kv.Key] = kv
	}
	return current, nil
}

type scanFunc func(...any) error

func (f scanFunc) Scan(dest ...any) error { return f(dest...) }

// rebindDollar rewrites "?" as "$1", "$2", … (the store's SQL never contains a
// literal question mark).
func rebindDollar(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}
