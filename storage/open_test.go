package storage_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffkube/skiff/migrations"
	"github.com/skiffkube/skiff/storage"
	_ "modernc.org/sqlite"
)

func openErr(endpoint string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := storage.New(ctx, storage.Config{Endpoint: endpoint, EncryptionKey: testKey})
	if err == nil {
		s.Close()
	}
	return err
}

func TestOpenRefusesWhatItCannotUse(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	os.WriteFile(garbage, []byte(strings.Repeat("this is not sqlite ", 400)), 0o600)

	foreign := filepath.Join(dir, "foreign.db")
	db, _ := sql.Open("sqlite", foreign)
	db.Exec(`CREATE TABLE invoices (id INTEGER PRIMARY KEY)`)
	db.Close()

	cases := []struct {
		name, endpoint, want string
	}{
		{"a file that is not SQLite", garbage, "not a SQLite database"},
		{"another application's database", foreign, "not created by skiff"},
		{"an unreachable PostgreSQL", "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", "cannot connect to PostgreSQL at 127.0.0.1:1/none"},
		{"a malformed PostgreSQL DSN", "postgres://x:y@host:notaport/db", "invalid PostgreSQL endpoint"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := openErr(c.endpoint)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want an error containing %q, got %v", c.want, err)
			}
		})
	}
	// The garbage file is left exactly as it was.
	if b, _ := os.ReadFile(garbage); !strings.HasPrefix(string(b), "this is not sqlite") {
		t.Fatal("the foreign file was modified")
	}
	if _, err := storage.New(context.Background(), storage.Config{Endpoint: filepath.Join(dir, "x.db"), EncryptionKey: []byte("short")}); err == nil || !strings.Contains(err.Error(), "EncryptionKey") {
		t.Fatalf("short key: %v", err)
	}
}

func TestSQLiteFileHasOneServer(t *testing.T) {
	ep := filepath.Join(t.TempDir(), "state.db")
	openStore(t, ep)
	if err := openErr(ep); err == nil || !strings.Contains(err.Error(), "in use by another skiff process") {
		t.Fatalf("second open: %v", err)
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		ep := b.endpoint(t)
		s := openStore(t, ep)
		ctx := ctxT(t)
		s.Create(ctx, "/keep/me", []byte("v"), 0)
		s.Close()
		var db *sql.DB
		if storage.IsPostgres(ep) {
			db, _ = sql.Open("pgx", ep)
		} else {
			db, _ = sql.Open("sqlite", ep)
		}
		// What a future skiff would leave behind.
		if _, err := db.Exec(`INSERT INTO ` + migrations.VersionTable + ` (version_id, is_applied) VALUES (99999, true)`); err != nil {
			t.Fatal(err)
		}
		db.Close()
		err := openErr(ep)
		if !errors.Is(err, migrations.ErrNewerSchema) || !strings.Contains(err.Error(), "schema version 99999") {
			t.Fatalf("want ErrNewerSchema naming the version, got %v", err)
		}
	})
}

// Several servers starting together on one empty PostgreSQL database migrate
// it once, without errors.
func TestConcurrentStartMigratesOnce(t *testing.T) {
	ep := postgresSchema(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = openErr(ep)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
