package storage_test

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/skiffkube/skiff/storage"
)

// Compaction runs while writers and a watcher keep going: old revisions then
// fail with ErrCompacted, current state is intact, the watcher sees every
// revision, and superseded history outside the retention is trimmed.
func TestCompactionDuringLoad(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		s := openStore(t, b.endpoint(t), func(c *storage.Config) { c.HistoryRetention = time.Nanosecond })
		ctx := ctxT(t)
		start, _ := s.Revision(ctx)
		w, err := s.Watch(ctx, storage.WatchOptions{Prefix: "/c/", AfterRevision: start})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		// The watcher reads only after the load; its buffer (1000) holds it all.
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := fmt.Sprintf("/c/%d", g)
				kv, err := s.Create(ctx, key, []byte("0"), 0)
				for i := 1; i <= 150 && err == nil; i++ {
					kv, err = s.Update(ctx, key, []byte(strconv.Itoa(i)), kv.ModRevision, 0)
				}
				if err != nil {
					t.Error(err)
				}
			}()
		}
		// Compact repeatedly while they write.
		compactions := 0
		for done := false; !done; {
			select {
			case <-waitChan(&wg):
				done = true
			case <-time.After(20 * time.Millisecond):
			}
			rev, _ := s.Revision(ctx)
			if rev-start > 20 {
				if err := s.Compact(ctx, rev-10); err != nil {
					t.Fatal(err)
				}
				compactions++
			}
		}
		end, _ := s.Revision(ctx)
		if err := s.Compact(ctx, end-5); err != nil {
			t.Fatal(err)
		}
		for g := 0; g < 4; g++ {
			kv, err := s.Get(ctx, fmt.Sprintf("/c/%d", g), 0)
			if err != nil || string(kv.Value) != "150" {
				t.Fatalf("current state of /c/%d after compaction: %v %v", g, kv, err)
			}
		}
		if _, err := s.Get(ctx, "/c/0", start+3); !errors.Is(err, storage.ErrCompacted) {
			t.Fatalf("get below the floor: %v", err)
		}
		if _, err := s.List(ctx, storage.ListOptions{Prefix: "/c/", Revision: start + 3}); !errors.Is(err, storage.ErrCompacted) {
			t.Fatalf("list below the floor: %v", err)
		}
		if l, err := s.List(ctx, storage.ListOptions{Prefix: "/c/", Revision: end - 5}); err != nil || len(l.KVs) != 4 {
			t.Fatalf("list at the floor: %v %v", l, err)
		}
		var rows int64
		s.DB().QueryRowContext(ctx, `SELECT count(*) FROM history`).Scan(&rows)
		if rows > 40 {
			t.Fatalf("history still has %d rows after compaction to %d with no retention", rows, end-5)
		}
		watched := collect(t, w, end, 10*time.Second)
		if int64(len(watched)) != end-start {
			t.Fatalf("watcher saw %d of %d events during compaction", len(watched), end-start)
		}
		t.Logf("%d compactions, %d history rows left of %d revisions", compactions, rows, end)
	})
}

func waitChan(wg *sync.WaitGroup) <-chan struct{} {
	c := make(chan struct{})
	go func() { wg.Wait(); close(c) }()
	return c
}

// History is kept for audit for HistoryRetention even below the floor.
func TestHistoryRetentionOutlivesCompaction(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		s := openStore(t, b.endpoint(t), func(c *storage.Config) { c.HistoryRetention = time.Hour })
		ctx := ctxT(t)
		kv, _ := s.Create(ctx, "/h/x", []byte("0"), 0)
		for i := 0; i < 10; i++ {
			kv, _ = s.Update(ctx, "/h/x", []byte(strconv.Itoa(i)), 0, 0)
		}
		if err := s.Compact(ctx, kv.ModRevision); err != nil {
			t.Fatal(err)
		}
		var rows int64
		s.DB().QueryRowContext(ctx, `SELECT count(*) FROM history WHERE key = '/h/x'`).Scan(&rows)
		if rows != 11 {
			t.Fatalf("audit history has %d rows, want all 11 within retention", rows)
		}
	})
}

// TTL keys expire once, even with two servers sweeping the same database.
func TestTTLExpiresOnceAcrossInstances(t *testing.T) {
	ep := postgresSchema(t)
	fast := func(c *storage.Config) { c.TTLSweepInterval = 50 * time.Millisecond }
	a, b := openStore(t, ep, fast), openStore(t, ep, fast)
	ctx := ctxT(t)
	for i := 0; i < 20; i++ {
		if _, err := a.Create(ctx, fmt.Sprintf("/ttl/%d", i), []byte("v"), 200*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		l, err := b.List(ctx, storage.ListOptions{Prefix: "/ttl/"})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.KVs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d TTL keys never expired", len(l.KVs))
		}
		time.Sleep(50 * time.Millisecond)
	}
	var deletes int64
	a.DB().QueryRowContext(ctx, `SELECT count(*) FROM history WHERE key LIKE '/ttl/%' AND op = 'delete'`).Scan(&deletes)
	if deletes != 20 {
		t.Fatalf("%d delete revisions for 20 expired keys", deletes)
	}
}
