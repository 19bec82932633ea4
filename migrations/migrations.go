// Package migrations holds skiff's SQL schema, one folder per dialect, embedded
// in the binary and applied at start. Files are never edited after a release:
// a schema change is a new numbered file in both folders.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed sqlite/*.sql postgres/*.sql
var files embed.FS

// Dialect names a folder of migrations.
type Dialect string

const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// VersionTable is the table goose records applied versions in.
const VersionTable = "skiff_schema_migrations"

// ErrNewerSchema: the database was migrated by a newer skiff than this binary.
var ErrNewerSchema = errors.New("database schema is newer than this skiff")

// ErrForeignDatabase: the database holds tables skiff did not create.
var ErrForeignDatabase = errors.New("database was not created by skiff")

// ownTables are the tables the migrations create; finding one of them without
// the version table means the database belongs to something else.
var ownTables = []string{"meta", "kv", "history"}

// Apply brings db up to the newest schema this binary knows and returns that
// version. Concurrent callers are safe: on PostgreSQL a session advisory lock
// serialises them (the second finds nothing to do); a SQLite file has a single
// server, which the store guarantees with a file lock before calling Apply.
func Apply(ctx context.Context, db *sql.DB, dialect Dialect, log *slog.Logger) (int64, error) {
	return ApplyUpTo(ctx, db, dialect, 0, log)
}

// ApplyUpTo is Apply stopping at version (0: the newest), for tests of what
// an upgrade from an older schema does to the data it finds. It returns the
// version it brought the database to (a database already past it is left
// as it is).
func ApplyUpTo(ctx context.Context, db *sql.DB, dialect Dialect, version int64, log *slog.Logger) (int64, error) {
	sub, err := fs.Sub(files, string(dialect))
	if err != nil {
		return 0, fmt.Errorf("migrations for %s: %w", dialect, err)
	}
	if err := checkNotForeign(ctx, db, dialect); err != nil {
		return 0, err
	}
	opts := []goose.ProviderOption{goose.WithTableName(VersionTable), goose.WithDisableGlobalRegistry(true)}
	gd := goose.DialectSQLite3
	if dialect == Postgres {
		gd = goose.DialectPostgres
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return 0, fmt.Errorf("migration lock: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(gd, db, sub, opts...)
	if err != nil {
		return 0, fmt.Errorf("loading migrations: %w", err)
	}
	current, target, err := p.GetVersions(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading schema version: %w", err)
	}
	if current > target {
		return 0, fmt.Errorf("%w: the database is at schema version %d but this binary knows versions up to %d; run the newer skiff or restore a backup",
			ErrNewerSchema, current, target)
	}
	if version > 0 && version < target {
		target = version
	}
	results, err := p.UpTo(ctx, target)
	if err != nil {
		return 0, fmt.Errorf("applying migrations: %w", err)
	}
	for _, r := range results {
		if log != nil {
			log.Info("applied schema migration", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
		}
	}
	return max(current, target), nil
}

func checkNotForeign(ctx context.Context, db *sql.DB, dialect Dialect) error {
	var q string
	switch dialect {
	case SQLite:
		q = `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`
	case Postgres:
		q = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`
	default:
		return fmt.Errorf("unknown dialect %q", dialect)
	}
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("reading the database's tables: %w", err)
	}
	defer rows.Close()
	var tables []string
	hasVersion := false
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return err
		}
		if name == VersionTable {
			hasVersion = true
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading the database's tables: %w", err)
	}
	if hasVersion {
		return nil
	}
	for _, t := range tables {
		// A SQLite file is skiff's alone; in a shared PostgreSQL database only
		// tables that collide with skiff's own are a problem.
		if dialect == SQLite || isOwnTable(t) {
			return fmt.Errorf("%w: it has table %q but no %s table; point skiff at an empty database", ErrForeignDatabase, t, VersionTable)
		}
	}
	return nil
}

func isOwnTable(name string) bool {
	for _, t := range ownTables {
		if t == name {
			return true
		}
	}
	return false
}
