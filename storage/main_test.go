package storage_test

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

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/skiffkube/skiff/storage"
)

// The conformance suite runs every test against both dialects. PostgreSQL
// tests need SKIFF_TEST_POSTGRES_DSN (hack/test.sh sets it); they skip without
// it, except in CI where nothing may skip.

var testKey = func() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}()

type backend struct {
	name string
	// endpoint returns a fresh, empty database for one test.
	endpoint func(t *testing.T) string
}

func backends(t *testing.T) []backend {
	return []backend{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "state.db") }},
		{"postgres", func(t *testing.T) string { return postgresSchema(t) }},
	}
}

func postgresDSN(t *testing.T) string {
	dsn := os.Getenv("SKIFF_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("SKIFF_TEST_POSTGRES_DSN is not set, and in CI no PostgreSQL test may skip (hack/test.sh sets it)")
		}
		t.Skip("PostgreSQL tests need SKIFF_TEST_POSTGRES_DSN (hack/test.sh sets it up)")
	}
	return dsn
}

// postgresSchema creates a schema of its own for one test (dropped after it)
// and returns a DSN whose search_path points at it.
func postgresSchema(t *testing.T) string {
	dsn := postgresDSN(t)
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	name := fmt.Sprintf("t_%d_%s", time.Now().UnixNano(), strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name())))
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
	q.Set("application_name", name) // lets a test find (and kill) only its own connections
	u.RawQuery = q.Encode()
	return u.String()
}

func openStore(t testing.TB, endpoint string, mutate ...func(*storage.Config)) *storage.Store {
	t.Helper()
	cfg := storage.Config{Endpoint: endpoint, EncryptionKey: testKey, PollInterval: 200 * time.Millisecond}
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

// each runs f once per dialect as a subtest with a fresh store.
func each(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) { f(t, b) })
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// benchPostgres is postgresSchema for benchmarks.
func benchPostgres(b *testing.B) string {
	dsn := os.Getenv("SKIFF_TEST_POSTGRES_DSN")
	if dsn == "" {
		b.Skip("needs SKIFF_TEST_POSTGRES_DSN")
	}
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		b.Fatal(err)
	}
	name := fmt.Sprintf("bench_%d", time.Now().UnixNano())
	if _, err := admin.Exec(`CREATE SCHEMA "` + name + `"`); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { admin.Exec(`DROP SCHEMA "` + name + `" CASCADE`); admin.Close() })
	u, _ := url.Parse(dsn)
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}
