package storage_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skiffkube/skiff/storage"
)

func TestCreateGetUpdateDelete(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		s := openStore(t, b.endpoint(t))
		ctx := storage.WithActor(ctxT(t), "alice")
		kv, err := s.Create(ctx, "/registry/configmaps/default/a", []byte("v1"), 0)
		if err != nil {
			t.Fatal(err)
		}
		if kv.ModRevision != kv.CreateRevision || kv.Version != 1 || string(kv.Value) != "v1" {
			t.Fatalf("create returned %+v", kv)
		}
		if _, err := s.Create(ctx, "/registry/configmaps/default/a", []byte("again"), 0); !errors.Is(err, storage.ErrKeyExists) {
			t.Fatalf("second create: want ErrKeyExists, got %v", err)
		}
		got, err := s.Get(ctx, "/registry/configmaps/default/a", 0)
		if err != nil || string(got.Value) != "v1" || got.ModRevision != kv.ModRevision {
			t.Fatalf("get: %+v %v", got, err)
		}
		up, err := s.Update(ctx, "/registry/configmaps/default/a", []byte("v2"), kv.ModRevision, 0)
		if err != nil {
			t.Fatal(err)
		}
		if up.ModRevision <= kv.ModRevision || up.CreateRevision != kv.CreateRevision || up.Version != 2 {
			t.Fatalf("update returned %+v", up)
		}
		cur, err := s.Update(ctx, "/registry/configmaps/default/a", []byte("stale"), kv.ModRevision, 0)
		if !errors.Is(err, storage.ErrConflict) || cur == nil || string(cur.Value) != "v2" {
			t.Fatalf("stale update: want ErrConflict with current v2, got %+v %v", cur, err)
		}
		if _, _, err := s.Delete(ctx, "/registry/configmaps/default/a", kv.ModRevision); !errors.Is(err, storage.ErrConflict) {
			t.Fatalf("stale delete: want ErrConflict, got %v", err)
		}
		old, err := s.Get(ctx, "/registry/configmaps/default/a", kv.ModRevision)
		if err != nil || string(old.Value) != "v1" {
			t.Fatalf("get at old revision: %+v %v", old, err)
		}
		del, rev, err := s.Delete(ctx, "/registry/configmaps/default/a", up.ModRevision)
		if err != nil || string(del.Value) != "v2" || rev <= up.ModRevision {
			t.Fatalf("delete: %+v %d %v", del, rev, err)
		}
		if _, err := s.Get(ctx, "/registry/configmaps/default/a", 0); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("get after delete: want ErrNotFound, got %v", err)
		}
		if _, err := s.Update(ctx, "/registry/configmaps/default/a", []byte("x"), 0, 0); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("update of deleted key: want ErrNotFound, got %v", err)
		}
		if _, err := s.Get(ctx, "/registry/configmaps/default/a", rev+100); !errors.Is(err, storage.ErrFutureRevision) {
			t.Fatalf("get at future revision: want ErrFutureRevision, got %v", err)
		}
		// History records who did what, queryable with plain SQL.
		rows, err := s.DB().QueryContext(ctx, `SELECT op, actor FROM history WHERE key = '/registry/configmaps/default/a' ORDER BY revision`)
		if err != nil {
			t.Fatal(err)
		}
		var ops []string
		for rows.Next() {
			var op, actor string
			rows.Scan(&op, &actor)
			ops = append(ops, op+":"+actor)
		}
		rows.Close()
		if strings.Join(ops, ",") != "create:alice,update:alice,delete:alice" {
			t.Fatalf("history = %v", ops)
		}
	})
}

func TestListPaginationIsPinnedToItsRevision(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		s := openStore(t, b.endpoint(t))
		ctx := ctxT(t)
		for i := 0; i < 25; i++ {
			if _, err := s.Create(ctx, fmt.Sprintf("/registry/pods/ns/p%02d", i), []byte(fmt.Sprint(i)), 0); err != nil {
				t.Fatal(err)
			}
		}
		s.Create(ctx, "/registry/pods/other/x", []byte("x"), 0)
		s.Create(ctx, "/registry/podsx/ns/y", []byte("y"), 0)
		first, err := s.List(ctx, storage.ListOptions{Prefix: "/registry/pods/ns/", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(first.KVs) != 10 || !first.More || first.KVs[0].Key != "/registry/pods/ns/p00" {
			t.Fatalf("first page: %d keys, more=%v", len(first.KVs), first.More)
		}
		// Change the world between pages: delete a key on page 2, update one,
		// add a new one. Later pages must still show the first page's revision.
		kv, _ := s.Get(ctx, "/registry/pods/ns/p12", 0)
		s.Delete(ctx, "/registry/pods/ns/p12", kv.ModRevision)
		s.Update(ctx, "/registry/pods/ns/p13", []byte("changed"), 0, 0)
		s.Create(ctx, "/registry/pods/ns/p10a", []byte("new"), 0)

		var all []*storage.KeyValue
		all = append(all, first.KVs...)
		last := first
		for last.More {
			page, err := s.List(ctx, storage.ListOptions{Prefix: "/registry/pods/ns/", Limit: 10, Revision: first.Revision, StartAfter: all[len(all)-1].Key})
			if err != nil {
				t.Fatal(err)
			}
			if page.Revision != first.Revision {
				t.Fatalf("page revision %d, want %d", page.Revision, first.Revision)
			}
			all = append(all, page.KVs...)
			last = page
		}
		if len(all) != 25 {
			t.Fatalf("paged list returned %d keys, want 25", len(all))
		}
		for i, kv := range all {
			if kv.Key != fmt.Sprintf("/registry/pods/ns/p%02d", i) || string(kv.Value) != fmt.Sprint(i) {
				t.Fatalf("item %d = %s %q", i, kv.Key, kv.Value)
			}
		}
		now, err := s.List(ctx, storage.ListOptions{Prefix: "/registry/pods/ns/"})
		if err != nil || len(now.KVs) != 25 { // 25 - p12 + p10a
			t.Fatalf("current list: %d %v", len(now.KVs), err)
		}
		everything, err := s.List(ctx, storage.ListOptions{Prefix: "/registry/pods/"})
		if err != nil || len(everything.KVs) != 26 {
			t.Fatalf("prefix /registry/pods/: %d %v (must not include /registry/podsx/)", len(everything.KVs), err)
		}
	})
}

func TestBadInputIsRejectedAndNothingIsWritten(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		s := openStore(t, b.endpoint(t), func(c *storage.Config) { c.MaxValueBytes = 1024 })
		ctx := ctxT(t)
		before, _ := s.Revision(ctx)
		cases := []struct {
			key   string
			value []byte
			want  error
		}{
			{"", nil, storage.ErrInvalidKey},
			{"no-slash", nil, storage.ErrInvalidKey},
			{"/bad\x00nul", nil, storage.ErrInvalidKey},
			{"/bad\xffutf8", nil, storage.ErrInvalidKey},
			{"/" + strings.Repeat("k", 5000), nil, storage.ErrInvalidKey},
			{"/big", bytes.Repeat([]byte("x"), 1025), storage.ErrValueTooLarge},
		}
		for _, c := range cases {
			if _, err := s.Create(ctx, c.key, c.value, 0); !errors.Is(err, c.want) {
				t.Errorf("Create(%.20q): want %v, got %v", c.key, c.want, err)
			}
			if _, err := s.Update(ctx, c.key, c.value, 0, 0); !errors.Is(err, c.want) {
				t.Errorf("Update(%.20q): want %v, got %v", c.key, c.want, err)
			}
		}
		if _, err := s.List(ctx, storage.ListOptions{Prefix: "/x\x00"}); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("List with NUL prefix: %v", err)
		}
		after, _ := s.Revision(ctx)
		if after != before {
			t.Fatalf("revision moved from %d to %d: bad input wrote something", before, after)
		}
		// Non-ASCII keys that are valid UTF-8 work and sort bytewise.
		for _, k := range []string{"/u/é", "/u/z", "/u/日本"} {
			if _, err := s.Create(ctx, k, []byte("v"), 0); err != nil {
				t.Fatal(err)
			}
		}
		l, err := s.List(ctx, storage.ListOptions{Prefix: "/u/"})
		if err != nil || len(l.KVs) != 3 || l.KVs[0].Key != "/u/z" || l.KVs[2].Key != "/u/日本" {
			t.Fatalf("utf-8 list: %v %v", l, err)
		}
	})
}

func TestSecretsAreEncryptedAtRest(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		ep := b.endpoint(t)
		s := openStore(t, ep)
		ctx := ctxT(t)
		secret := []byte(`{"data":{"password":"hunter2-plaintext"}}`)
		cm, err := s.Create(ctx, "/registry/configmaps/default/db", []byte("visible"), 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, "/registry/secrets/default/db", secret, 0); err != nil {
			t.Fatal(err)
		}
		// The value is stored once, in history (kv holds revisions only).
		var raw []byte
		if err := s.DB().QueryRowContext(ctx, `SELECT value FROM history WHERE key = '/registry/secrets/default/db'`).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		if len(raw) == 0 || bytes.Contains(raw, []byte("hunter2")) {
			t.Fatalf("history holds the secret as %q", raw)
		}
		got, err := s.Get(ctx, "/registry/secrets/default/db", 0)
		if err != nil || !bytes.Equal(got.Value, secret) {
			t.Fatalf("get secret: %q %v", got.Value, err)
		}
		w, err := s.Watch(ctx, storage.WatchOptions{Prefix: "/registry/secrets/", AfterRevision: cm.ModRevision})
		if err != nil {
			t.Fatal(err)
		}
		ev, ok := <-w.Events()
		if !ok || !bytes.Equal(ev.KV.Value, secret) {
			t.Fatalf("watched secret %q", ev.KV.Value)
		}
		w.Stop()
		s.Close()
		// The wrong key cannot read it and says so.
		wrong := openStore(t, ep, func(c *storage.Config) { c.EncryptionKey = bytes.Repeat([]byte{7}, 32) })
		if _, err := wrong.Get(ctx, "/registry/secrets/default/db", 0); err == nil || !strings.Contains(err.Error(), "decrypted") {
			t.Fatalf("wrong key: %v", err)
		}
		if v, err := wrong.Get(ctx, "/registry/configmaps/default/db", 0); err != nil || string(v.Value) != "visible" {
			t.Fatalf("non-secret with another key: %v", err)
		}
	})
}

func TestTTLKeysExpire(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		s := openStore(t, b.endpoint(t), func(c *storage.Config) { c.TTLSweepInterval = 100 * time.Millisecond })
		ctx := ctxT(t)
		s.Create(ctx, "/registry/events/default/e1", []byte("e"), 300*time.Millisecond)
		s.Create(ctx, "/registry/events/default/keep", []byte("k"), 0)
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := s.Get(ctx, "/registry/events/default/e1", 0)
			if errors.Is(err, storage.ErrNotFound) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("TTL key did not expire")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if _, err := s.Get(ctx, "/registry/events/default/keep", 0); err != nil {
			t.Fatal(err)
		}
	})
}
