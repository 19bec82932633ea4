package pgtemp

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

var validName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Database is a throw-away database.
type Database struct {
	// Name is the database's name; DSN a postgres:// URL that opens it.
	Name, DSN string
	admin     string
}

// Create (re)creates database name on the server that adminDSN (a
// postgres:// URL to any database the user may connect to) points at. A
// leftover database of the same name from an aborted run is dropped first.
func Create(ctx context.Context, adminDSN, name string) (*Database, error) {
	if !validName.MatchString(name) {
		return nil, fmt.Errorf("pgtemp: invalid database name %q", name)
	}
	u, err := url.Parse(adminDSN)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("pgtemp: the Postgres DSN must be a postgres:// URL, got %q", adminDSN)
	}
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		return nil, fmt.Errorf("pgtemp: connect to %s: %w", redact(u), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
		return nil, fmt.Errorf("pgtemp: drop old %s: %w", name, err)
	}
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		return nil, fmt.Errorf("pgtemp: create %s: %w", name, err)
	}
	du := *u
	du.Path = "/" + name
	return &Database{Name: name, DSN: du.String(), admin: adminDSN}, nil
}

// Drop removes the database, ending any session still connected to it.
func (d *Database) Drop(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, d.admin)
	if err != nil {
		return fmt.Errorf("pgtemp: connect to drop %s: %w", d.Name, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS `+d.Name+` WITH (FORCE)`); err != nil {
		return fmt.Errorf("pgtemp: drop %s: %w", d.Name, err)
	}
	return nil
}

// ServerVersion returns the server's version string, e.g. "PostgreSQL 15.20".
func ServerVersion(ctx context.Context, adminDSN string) (string, error) {
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		return "", fmt.Errorf("pgtemp: connect: %w", err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, `SHOW server_version`).Scan(&v); err != nil {
		return "", fmt.Errorf("pgtemp: server version: %w", err)
	}
	if i := strings.IndexByte(v, ' '); i > 0 {
		v = v[:i]
	}
	return "PostgreSQL " + v, nil
}

func redact(u *url.URL) string { return u.Redacted() }
