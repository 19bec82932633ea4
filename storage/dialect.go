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
	// lockMetaSQL reads the meta row and locks it until the transaction ends.
	lockMetaSQL() string
	// readTxOptions give a read-only transaction with one snapshot.
	readTxOptions() *sql.TxOptions
	// dynamicArgs adapts the arguments of a statement whose text varies with
	// the batch (multi-row VALUES, IN lists).
	dynamicArgs(args []any) []any
	// execWrites runs a write transaction's statements (the last one updates
	// meta) and, where the dialect has notifications, signals the new revision
	// to other processes at commit.
	execWrites(ctx context.Context, tx *sql.Tx, stmts []stmt, revision string) error
	// timeArg and parseTime convert history's "at" column.
	timeArg(t time.Time) any
	parseTime(v any) (time.Time, error)
	// listen calls wake whenever another process may have committed, until
	// ctx ends. Dialects without notifications return at once.
	listen(ctx context.Context, wake func())
	// translate maps driver errors to clearer ones (e.g. "not a database").
	translate(err error) error
	close() error
}

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
