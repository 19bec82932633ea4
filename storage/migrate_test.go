package storage_test

import (
	"database/sql"
	"testing"

	"github.com/skiffkube/skiff/migrations"
	"github.com/skiffkube/skiff/storage"
)

// A database written by schema version 1, which stored every value in kv and
// in history, reads the same after the upgrade that keeps it only in history
// (00002_value_once), and takes writes; a live key whose history row was lost
// gets it back from kv.
func TestUpgradeFromValuesInKV(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		ep := b.endpoint(t)
		ctx := ctxT(t)
		driver, dialect, at := "sqlite", migrations.SQLite, any("2026-01-01T00:00:00.000000000Z")
		if storage.IsPostgres(ep) {
			driver, dialect, at = "pgx", migrations.Postgres, any("2026-01-01T00:00:00Z")
		}
		db, err := sql.Open(driver, ep)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := migrations.ApplyUpTo(ctx, db, dialect, 1, nil); err != nil || v != 1 {
			t.Fatalf("schema 1: %d %v", v, err)
		}
		const a, bk, c = "/registry/configmaps/default/a", "/registry/configmaps/default/b", "/registry/configmaps/default/c"
		rebind := func(q string) string { return q }
		if dialect == migrations.Postgres {
			rebind = storage.RebindDollar
		}
		for _, st := range []struct {
			q    string
			args []any
		}{
			{`UPDATE meta SET revision = 4 WHERE id = 1`, nil},
			{`INSERT INTO history (revision, key, op, value, create_revision, prev_revision, version, actor, at) VALUES (?, ?, ?, ?, ?, ?, ?, 'old', ?)`,
				[]any{1, a, "create", []byte("a1"), 1, 0, 1, at}},
			{`INSERT INTO history (revision, key, op, value, create_revision, prev_revision, version, actor, at) VALUES (?, ?, ?, ?, ?, ?, ?, 'old', ?)`,
				[]any{2, a, "update", []byte("a2"), 1, 1, 2, at}},
			{`INSERT INTO history (revision, key, op, value, create_revision, prev_revision, version, actor, at) VALUES (?, ?, ?, ?, ?, ?, ?, 'old', ?)`,
				[]any{3, bk, "create", []byte("b1"), 3, 0, 1, at}},
			{`INSERT INTO kv (key, value, create_revision, mod_revision, version) VALUES (?, ?, ?, ?, ?)`, []any{a, []byte("a2"), 1, 2, 2}},
			{`INSERT INTO kv (key, value, create_revision, mod_revision, version) VALUES (?, ?, ?, ?, ?)`, []any{bk, []byte("b1"), 3, 3, 1}},
			// c's history row (revision 4) is missing.
			{`INSERT INTO kv (key, value, create_revision, mod_revision, version) VALUES (?, ?, ?, ?, ?)`, []any{c, []byte("c1"), 4, 4, 1}},
		} {
			if _, err := db.ExecContext(ctx, rebind(st.q), st.args...); err != nil {
				t.Fatalf("%s: %v", st.q, err)
			}
		}
		db.Close()

		s := openStore(t, ep)
		for key, want := range map[string]string{a: "a2", bk: "b1", c: "c1"} {
			got, err := s.Get(ctx, key, 0)
			if err != nil || string(got.Value) != want {
				t.Fatalf("get %s after the upgrade: %v %v", key, got, err)
			}
		}
		if old, err := s.Get(ctx, a, 1); err != nil || string(old.Value) != "a1" {
			t.Fatalf("get %s at revision 1: %v %v", a, old, err)
		}
		l, err := s.List(ctx, storage.ListOptions{Prefix: "/registry/configmaps/", AnyRevision: false})
		if err != nil || len(l.KVs) != 3 || l.Revision != 4 {
			t.Fatalf("list after the upgrade: %+v %v", l, err)
		}
		var actor string
		if err := s.DB().QueryRowContext(ctx, rebind(`SELECT actor FROM history WHERE revision = ?`), 4).Scan(&actor); err != nil || actor != "system:skiff:migration" {
			t.Fatalf("the lost history row of %s: actor %q, %v", c, actor, err)
		}
		up, err := s.Update(ctx, a, []byte("a3"), 2, 0)
		if err != nil || up.ModRevision != 5 || up.Version != 3 {
			t.Fatalf("update after the upgrade: %+v %v", up, err)
		}
		if got, err := s.Get(ctx, a, 0); err != nil || string(got.Value) != "a3" {
			t.Fatalf("get after the update: %v %v", got, err)
		}
	})
}
