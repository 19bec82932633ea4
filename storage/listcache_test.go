package storage_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/skiffkube/skiff/storage"
)

// TestListCacheMatchesDatabase runs concurrent creates, updates, deletes and
// TTL expiries, then checks that every page the cache serves equals the
// database's state at the same revision.
func TestListCacheMatchesDatabase(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		s := openStore(t, b.endpoint(t), func(c *storage.Config) { c.TTLSweepInterval = 50 * time.Millisecond })
		ctx := ctxT(t)
		if !s.ListCacheUsable() {
			t.Fatal("the list cache is not loaded after open")
		}
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(w), 1))
				for i := 0; i < 150; i++ {
					key := fmt.Sprintf("/registry/pods/ns%d/p%03d", r.IntN(3), r.IntN(60))
					switch r.IntN(4) {
					case 0:
						s.Create(ctx, key, []byte(fmt.Sprint("v", i)), 0)
					case 1:
						s.Update(ctx, key, []byte(fmt.Sprint("u", i)), 0, 0)
					case 2:
						s.Delete(ctx, key, 0)
					default:
						s.Create(ctx, key+"-ttl", []byte("t"), time.Duration(r.IntN(200))*time.Millisecond)
					}
				}
			}()
		}
		wg.Wait()
		time.Sleep(300 * time.Millisecond) // let TTL deletes happen
		for _, prefix := range []string{"/registry/pods/", "/registry/pods/ns1/", "/registry/"} {
			cached, err := s.List(ctx, storage.ListOptions{Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			db, err := s.ListFromDatabase(ctx, storage.ListOptions{Prefix: prefix, Revision: cached.Revision})
			if err != nil {
				t.Fatal(err)
			}
			sameKVs(t, prefix, cached.KVs, db.KVs)
			// AnyRevision (resourceVersion=0) is the cache as it is: still
			// exactly the database's state at the revision it reports.
			anyRev, err := s.List(ctx, storage.ListOptions{Prefix: prefix, AnyRevision: true})
			if err != nil || anyRev.Revision < cached.Revision {
				t.Fatalf("AnyRevision list: revision %v (%v), want at least %d", anyRev, err, cached.Revision)
			}
			atAny, err := s.ListFromDatabase(ctx, storage.ListOptions{Prefix: prefix, Revision: anyRev.Revision})
			if err != nil {
				t.Fatal(err)
			}
			sameKVs(t, prefix+" AnyRevision", anyRev.KVs, atAny.KVs)
			// Pages (limit + continue at the first page's revision) add up
			// to the same keys.
			var paged []*storage.KeyValue
			after := ""
			for {
				page, err := s.List(ctx, storage.ListOptions{Prefix: prefix, StartAfter: after, Limit: 7, Revision: cached.Revision})
				if err != nil {
					t.Fatal(err)
				}
				paged = append(paged, page.KVs...)
				if !page.More {
					break
				}
				after = page.KVs[len(page.KVs)-1].Key
			}
			sameKVs(t, prefix+" paged", paged, db.KVs)
		}
	})
}

func sameKVs(t *testing.T, what string, got, want []*storage.KeyValue) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d keys, the database has %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Key != w.Key || !bytes.Equal(g.Value, w.Value) || g.ModRevision != w.ModRevision ||
			g.CreateRevision != w.CreateRevision || g.Version != w.Version || !g.ExpiresAt.Equal(w.ExpiresAt) {
			t.Fatalf("%s: key %d is %+v, the database has %+v", what, i, g, w)
		}
	}
}

// TestListSeesWritesOfOtherServers: a write acknowledged by one server is in
// the very next list on another, although that list is served from memory.
func TestListSeesWritesOfOtherServers(t *testing.T) {
	ep := postgresSchema(t)
	a := openStore(t, ep)
	// A long poll interval: only the list's own wait may bring the cache
	// up to date in time.
	b := openStore(t, ep, func(c *storage.Config) { c.PollInterval = time.Hour })
	ctx := ctxT(t)
	for i := 0; i < 50; i++ {
		key := fmt.Sprintf("/registry/configmaps/default/c%02d", i)
		if _, err := a.Create(ctx, key, []byte("x"), 0); err != nil {
			t.Fatal(err)
		}
		l, err := b.List(ctx, storage.ListOptions{Prefix: "/registry/configmaps/"})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.KVs) != i+1 || l.KVs[i].Key != key {
			t.Fatalf("after create %d the other server lists %d keys", i, len(l.KVs))
		}
		if i%5 == 4 {
			if _, _, err := a.Delete(ctx, key, 0); err != nil {
				t.Fatal(err)
			}
			l, err := b.List(ctx, storage.ListOptions{Prefix: key})
			if err != nil || len(l.KVs) != 0 {
				t.Fatalf("deleted key still listed by the other server: %v %v", l, err)
			}
			if _, err := a.Create(ctx, key, []byte("x"), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !b.ListCacheUsable() {
		t.Fatal("the second server's lists did not come from its cache")
	}
}

// TestListCacheOutgrown: a state larger than ListCacheBytes turns the cache
// off and lists keep working from the database.
func TestListCacheOutgrown(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		s := openStore(t, b.endpoint(t), func(c *storage.Config) { c.ListCacheBytes = 4096 })
		ctx := ctxT(t)
		for i := 0; i < 20; i++ {
			if _, err := s.Create(ctx, fmt.Sprintf("/registry/configmaps/default/c%02d", i), make([]byte, 512), 0); err != nil {
				t.Fatal(err)
			}
		}
		l, err := s.List(ctx, storage.ListOptions{Prefix: "/registry/configmaps/"})
		if err != nil || len(l.KVs) != 20 {
			t.Fatalf("list after the cache was outgrown: %d keys, %v", len(l.KVs), err)
		}
		if s.ListCacheUsable() {
			t.Fatal("the cache still serves lists beyond its limit")
		}
	})
}

// TestStoreKeepsItsOwnCopyOfValues: a caller reusing its buffer after a write
// does not change what the store (and its caches) hold.
func TestStoreKeepsItsOwnCopyOfValues(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		s := openStore(t, b.endpoint(t))
		ctx := context.Background()
		buf := []byte("original")
		if _, err := s.Create(ctx, "/registry/configmaps/default/c", buf, 0); err != nil {
			t.Fatal(err)
		}
		copy(buf, "CHANGED!")
		l, err := s.List(ctx, storage.ListOptions{Prefix: "/registry/configmaps/"})
		if err != nil || len(l.KVs) != 1 || string(l.KVs[0].Value) != "original" {
			t.Fatalf("list after the caller reused its buffer: %v %v", l, err)
		}
	})
}

// TestHandedOverValueIsKeptAsIs: a value handed over is what the store
// keeps, not a copy (the point of HandOver), cut to its length so that an
// append by a reader cannot write into the caller's spare capacity.
func TestHandedOverValueIsKeptAsIs(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		s := openStore(t, b.endpoint(t))
		ctx := context.Background()
		for _, write := range []func(v []byte) (*storage.KeyValue, error){
			func(v []byte) (*storage.KeyValue, error) {
				return s.Create(ctx, "/registry/configmaps/default/c", v, 0, storage.HandOver())
			},
			func(v []byte) (*storage.KeyValue, error) {
				return s.Update(ctx, "/registry/configmaps/default/c", v, 0, 0, storage.HandOver())
			},
		} {
			v := make([]byte, 8, 64)
			copy(v, "original")
			kv, err := write(v)
			if err != nil {
				t.Fatal(err)
			}
			if &kv.Value[0] != &v[0] || cap(kv.Value) != len(v) {
				t.Fatalf("the store kept %p (cap %d), not the value handed over %p cut to %d", &kv.Value[0], cap(kv.Value), &v[0], len(v))
			}
			got, err := s.Get(ctx, "/registry/configmaps/default/c", 0)
			if err != nil || string(got.Value) != "original" {
				t.Fatalf("get after a handed-over write: %v %v", got, err)
			}
		}
	})
}

// TestListCacheSkip: keys under ListCacheSkip take no room in the cache (so
// many of them do not outgrow it), and lists and cached reads that reach
// them still see them, from the database.
func TestListCacheSkip(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		s := openStore(t, b.endpoint(t), func(c *storage.Config) {
			c.ListCacheBytes = 4096
			c.ListCacheSkip = []string{"/registry/events/"}
		})
		ctx := ctxT(t)
		for i := 0; i < 20; i++ {
			if _, err := s.Create(ctx, fmt.Sprintf("/registry/events/default/e%02d", i), make([]byte, 512), 0); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := s.Delete(ctx, "/registry/events/default/e00", 0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, "/registry/configmaps/default/c", []byte("c"), 0); err != nil {
			t.Fatal(err)
		}
		if !s.ListCacheUsable() {
			t.Fatal("skipped keys filled the list cache")
		}
		for prefix, want := range map[string]int{"/registry/events/": 19, "/registry/events/default/": 19, "/registry/": 20, "/registry/configmaps/": 1} {
			l, err := s.List(ctx, storage.ListOptions{Prefix: prefix})
			if err != nil || len(l.KVs) != want {
				t.Fatalf("list %s: %d keys (want %d), %v", prefix, len(l.KVs), want, err)
			}
		}
		if _, _, ok := s.GetCached("/registry/events/default/e01"); ok {
			t.Fatal("the cache answered for a skipped key")
		}
		if kv, found, ok := s.GetCached("/registry/configmaps/default/c"); !ok || !found || string(kv.Value) != "c" {
			t.Fatalf("cached read of a mirrored key: %v %v %v", kv, found, ok)
		}
	})
}
