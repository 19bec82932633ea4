package pgtemp

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func adminDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("SKIFF_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but SKIFF_TEST_POSTGRES_DSN is not set")
		}
		t.Skip("SKIFF_TEST_POSTGRES_DSN is not set; no PostgreSQL to create databases on")
	}
	return dsn
}

func TestCreateAndDrop(t *testing.T) {
	admin := adminDSN(t)
	ctx := context.Background()
	name := fmt.Sprintf("pgtemp_test_%d", os.Getpid())
	db, err := Create(ctx, admin, name)
	if err != nil {
		t.Fatal(err)
	}
	// A second Create of the same name replaces a leftover database.
	if db, err = Create(ctx, admin, name); err != nil {
		t.Fatalf("re-create: %v", err)
	}
	conn, err := pgx.Connect(ctx, db.DSN)
	if err != nil {
		t.Fatalf("connect to the new database: %v", err)
	}
	var got string
	if err := conn.QueryRow(ctx, `SELECT current_database()`).Scan(&got); err != nil || got != name {
		t.Fatalf("current_database() = %q, %v; want %q", got, err, name)
	}
	// Drop must succeed even with a session still connected.
	if err := db.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	ac, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close(ctx)
	var n int
	if err := ac.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname = $1`, name).Scan(&n); err != nil || n != 0 {
		t.Fatalf("database still exists after Drop (count %d, %v)", n, err)
	}
	if v, err := ServerVersion(ctx, admin); err != nil || !strings.HasPrefix(v, "PostgreSQL ") {
		t.Fatalf("ServerVersion = %q, %v", v, err)
	}
}

func TestCreateRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ dsn, name, want string }{
		{"postgres://x@127.0.0.1/postgres", "Bad-Name", "invalid database name"},
		{"postgres://x@127.0.0.1/postgres", "x; DROP DATABASE postgres", "invalid database name"},
		{"host=127.0.0.1 user=x", "ok_name", "postgres:// URL"},
	} {
		if _, err := Create(ctx, tc.dsn, tc.name); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Create(%q, %q) err = %v, want %q", tc.dsn, tc.name, err, tc.want)
		}
	}
}
