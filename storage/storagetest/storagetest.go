// Package storagetest opens real stores for other packages' tests: a SQLite
// file in the test's temporary directory, or a schema of its own in the
// PostgreSQL database named by SKIFF_TEST_POSTGRES_DSN.
package storagetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver for schema set-up
	"github.com/skiffkube/skiff/storage"
)

// PostgresEnv names the variable holding the test database's URL.
const PostgresEnv = "SKIFF_TEST_POSTGRES_DSN"

// Key is a random encryption key, fixed for the test binary.
var Key = func() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}()

// SQLiteEndpoint returns the path of a fresh SQLite file.
func SQLiteEndpoint(t testing.TB) string {
	return filepath.Join(t.TempDir(), "state.db")
}

// PostgresDSN returns the test database URL, or skips the test when there is
// none — except under CI=true, where nothing may skip.
func PostgresDSN(t testing.TB) string {
	dsn := os.Getenv(PostgresEnv)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set, and in CI no PostgreSQL test may skip (hack/test.sh sets it)", PostgresEnv)
		}
		t.Skipf("PostgreSQL tests need %s (hack/test.sh sets it up)", PostgresEnv)
	}
	return dsn
}

// PostgresEndpoint creates a schema for this test alone (dropped after it)
// and returns a URL whose search_path and application_name are that schema.
func PostgresEndpoint(t testing.TB) string {
	dsn := PostgresDSN(t)
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	name := fmt.Sprintf("t_%d_%s", time.Now().UnixNano(), strings.ToLower(strings.NewReplacer("/", "_", "-", "_", " ", "_", "=", "_").Replace(t.Name())))
	if len(name) > 60 {
		name = name[:60]
	}
	if _, err := admin.Exec(`CREATE SCHEMA "` + name + `"`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(`DROP SCHEMA "` + name + `" CASCADE`) })
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", name)
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// Open opens a store on endpoint, closed when the test ends.
func Open(t testing.TB, endpoint string, mutate ...func(*storage.Config)) *storage.Store {
	t.Helper()
	cfg := storage.Config{Endpoint: endpoint, EncryptionKey: Key, PollInterval: 200 * time.Millisecond}
	for _, m := range mutate {
		m(&cfg)
	}
	s, err := storage.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("storage.New(%s): %v", endpoint, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Dialects runs f as a subtest per dialect with that dialect's endpoint maker.
func Dialects(t *testing.T, f func(t *testing.T, endpoint func(testing.TB) string)) {
	t.Run("sqlite", func(t *testing.T) { f(t, SQLiteEndpoint) })
	t.Run("postgres", func(t *testing.T) { f(t, PostgresEndpoint) })
}
