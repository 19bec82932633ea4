package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/skiffkube/skiff/storage"
	"github.com/skiffkube/skiff/storage/storagetest"
)

// The conformance suite runs every test against both dialects. PostgreSQL
// tests need SKIFF_TEST_POSTGRES_DSN (hack/test.sh sets it); they skip without
// it, except in CI where nothing may skip. storagetest opens the databases.

var testKey = storagetest.Key

type backend struct {
	name string
	// endpoint returns a fresh, empty database for one test.
	endpoint func(t *testing.T) string
}

func backends(*testing.T) []backend {
	return []backend{
		{"sqlite", func(t *testing.T) string { return storagetest.SQLiteEndpoint(t) }},
		{"postgres", func(t *testing.T) string { return storagetest.PostgresEndpoint(t) }},
	}
}

func postgresDSN(t *testing.T) string    { return storagetest.PostgresDSN(t) }
func postgresSchema(t *testing.T) string { return storagetest.PostgresEndpoint(t) }
func benchPostgres(b *testing.B) string  { return storagetest.PostgresEndpoint(b) }

func openStore(t testing.TB, endpoint string, mutate ...func(*storage.Config)) *storage.Store {
	t.Helper()
	return storagetest.Open(t, endpoint, mutate...)
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
