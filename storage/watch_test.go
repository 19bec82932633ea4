package storage_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffkube/skiff/storage"
)

// collect reads events until it has seen revision upTo (or times out) and
// checks they come in strictly increasing revision order.
func collect(t *testing.T, w storage.Watch, upTo int64, timeout time.Duration) []storage.Event {
	t.Helper()
	var evs []storage.Event
	deadline := time.After(timeout)
	last := int64(0)
	for last < upTo {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("watch ended early at revision %d (want %d): %v", last, upTo, w.Err())
			}
			if ev.Type == storage.Progress {
				continue
			}
			if ev.Revision <= last {
				t.Fatalf("revision %d after %d: out of order or duplicate", ev.Revision, last)
			}
			last = ev.Revision
			evs = append(evs, ev)
		case <-deadline:
			t.Fatalf("timed out at revision %d waiting for %d", last, upTo)
		}
	}
	return evs
}

func TestWatchDeliversEveryChangeWithPreviousValues(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		s := openStore(t, b.endpoint(t))
		ctx := ctxT(t)
		base, _ := s.Create(ctx, "/registry/pods/a/base", []byte("0"), 0)
		live, err := s.Watch(ctx, storage.WatchOptions{Prefix: "/registry/pods/a/"})
		if err != nil {
			t.Fatal(err)
		}
		defer live.Stop()
		kv, _ := s.Create(ctx, "/registry/pods/a/x", []byte("1"), 0)
		s.Create(ctx, "/registry/pods/b/ignored", []byte("other prefix"), 0)
		kv2, _ := s.Update(ctx, "/registry/pods/a/x", []byte("2"), kv.ModRevision, 0)
		_, last, _ := s.Delete(ctx, "/registry/pods/a/x", kv2.ModRevision)

		check := func(evs []storage.Event) {
			t.Helper()
			if len(evs) != 3 {
				t.Fatalf("got %d events, want 3: %+v", len(evs), evs)
			}
			if evs[0].Type != storage.Created || string(evs[0].KV.Value) != "1" || evs[0].PrevKV != nil {
				t.Errorf("create event %+v", evs[0])
			}
			if evs[1].Type != storage.Updated || string(evs[1].KV.Value) != "2" || string(evs[1].PrevKV.Value) != "1" || evs[1].PrevKV.ModRevision != kv.ModRevision {
				t.Errorf("update event %+v prev %+v", evs[1], evs[1].PrevKV)
			}
			if evs[2].Type != storage.Deleted || evs[2].KV.ModRevision != last || string(evs[2].PrevKV.Value) != "2" {
				t.Errorf("delete event %+v", evs[2])
			}
		}
		check(collect(t, live, last, 10*time.Second))
		// The same history from an old revision: served from the hub's cache,
		// and with a cold cache (a second store) from SQL.
		again, _ := s.Watch(ctx, storage.WatchOptions{Prefix: "/registry/pods/a/", AfterRevision: base.ModRevision})
		check(collect(t, again, last, 10*time.Second))
		again.Stop()
	})
}

func TestWatchFromSQLWhenCacheIsCold(t *testing.T) {
	t.Run("bounded by count", func(t *testing.T) { testColdCache(t, func(c *storage.Config) { c.WatchCache = 10 }) })
	t.Run("bounded by bytes", func(t *testing.T) { testColdCache(t, func(c *storage.Config) { c.WatchCacheBytes = 1000 }) })
}

func testColdCache(t *testing.T, bound func(*storage.Config)) {
	each(t, func(t *testing.T, b backend) {
		ep := b.endpoint(t)
		s := openStore(t, ep, bound)
		ctx := ctxT(t)
		first, _ := s.Create(ctx, "/k/0", []byte("0"), 0)
		var last int64
		for i := 1; i < 50; i++ {
			kv, err := s.Create(ctx, fmt.Sprintf("/k/%d", i), []byte("v"), 0)
			if err != nil {
				t.Fatal(err)
			}
			last = kv.ModRevision
		}
		w, err := s.Watch(ctx, storage.WatchOptions{Prefix: "/k/", AfterRevision: first.ModRevision})
		if err != nil {
			t.Fatal(err)
		}
		if evs := collect(t, w, last, 10*time.Second); len(evs) != 49 {
			t.Fatalf("got %d events, want 49", len(evs))
		}
		w.Stop()
	})
}

// A watcher that falls more than the watch buffer behind is taken off the
// live stream and, once it reads again, catches up from the ring (small
// lag) or from history (the ring no longer reaches back): its client sees
// every event once, in order, and never has to list again. The others are
// not held up meanwhile.
func TestSlowWatcherCatchesUpWithoutStallingOthers(t *testing.T) {
	for _, c := range []struct {
		name      string
		watchRing int
	}{{"from the ring", 0}, {"from history", 10}} {
		t.Run(c.name, func(t *testing.T) {
			each(t, func(t *testing.T, b backend) {
				s := openStore(t, b.endpoint(t), func(cfg *storage.Config) {
					cfg.WatchBuffer = 20
					if c.watchRing > 0 {
						cfg.WatchCache = c.watchRing
					}
				})
				ctx := ctxT(t)
				slow, _ := s.Watch(ctx, storage.WatchOptions{Prefix: "/k/"})
				fast, _ := s.Watch(ctx, storage.WatchOptions{Prefix: "/k/"})
				done := make(chan []storage.Event)
				var fastSeen atomic.Int64
				go func() { done <- collectUntil(fast, 100, &fastSeen) }()
				// Write in steps of 10 (half the buffer) and let the fast
				// watcher catch up between steps, so only the one that never
				// reads falls behind, however loaded the machine is.
				var first, last int64
				for i := 0; i < 100; i++ {
					kv, err := s.Create(ctx, fmt.Sprintf("/k/%d", i), []byte("v"), 0)
					if err != nil {
						t.Fatal(err)
					}
					if i == 0 {
						first = kv.ModRevision
					}
					last = kv.ModRevision
					if i%10 == 9 {
						for int(fastSeen.Load()) < i+1 {
							time.Sleep(5 * time.Millisecond)
						}
					}
				}
				if evs := <-done; len(evs) != 100 || evs[99].Revision != last {
					t.Fatalf("fast watcher got %d events", len(evs))
				}
				// The slow one reads now: everything, once, in order, then
				// live events again.
				kv, err := s.Create(ctx, "/k/after", []byte("v"), 0)
				if err != nil {
					t.Fatal(err)
				}
				var seen atomic.Int64
				evs := collectUntil(slow, 101, &seen)
				if len(evs) != 101 {
					t.Fatalf("slow watcher got %d events, ended with %v", len(evs), slow.Err())
				}
				for i, ev := range evs[:100] {
					if ev.Revision != first+int64(i) || ev.KV.Key != fmt.Sprintf("/k/%d", i) {
						t.Fatalf("event %d: revision %d key %s, want %d /k/%d", i, ev.Revision, ev.KV.Key, first+int64(i), i)
					}
				}
				if evs[100].Revision != kv.ModRevision {
					t.Fatalf("live event after the catch-up: revision %d, want %d", evs[100].Revision, kv.ModRevision)
				}
				slow.Stop()
			})
		})
	}
}

// A watcher that fell behind past a compaction cannot catch up: it ends
// with ErrCompacted and its client lists again.
func TestSlowWatcherBehindACompactionEnds(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		s := openStore(t, b.endpoint(t), func(cfg *storage.Config) { cfg.WatchBuffer = 5; cfg.WatchCache = 5 })
		ctx := ctxT(t)
		slow, _ := s.Watch(ctx, storage.WatchOptions{Prefix: "/k/"})
		var last int64
		for i := 0; i < 30; i++ {
			kv, err := s.Create(ctx, fmt.Sprintf("/k/%d", i), []byte("v"), 0)
			if err != nil {
				t.Fatal(err)
			}
			last = kv.ModRevision
		}
		if err := s.Compact(ctx, last); err != nil {
			t.Fatal(err)
		}
		deadline := time.After(10 * time.Second)
		for {
			select {
			case _, ok := <-slow.Events():
				if ok {
					continue
				}
				if !errors.Is(slow.Err(), storage.ErrCompacted) {
					t.Fatalf("slow watcher ended with %v, want ErrCompacted", slow.Err())
				}
				return
			case <-deadline:
				t.Fatal("slow watcher was never closed")
			}
		}
	})
}

func collectUntil(w storage.Watch, n int, seen *atomic.Int64) []storage.Event {
	var evs []storage.Event
	for ev := range w.Events() {
		if ev.Type == storage.Progress {
			continue
		}
		evs = append(evs, ev)
		seen.Store(int64(len(evs)))
		if len(evs) == n {
			break
		}
	}
	return evs
}

func TestProgressNotifyWhenIdle(t *testing.T) {
	s := openStore(t, backends(t)[0].endpoint(t), func(c *storage.Config) { c.ProgressInterval = 100 * time.Millisecond })
	ctx := ctxT(t)
	kv, _ := s.Create(ctx, "/other/x", []byte("v"), 0)
	w, _ := s.Watch(ctx, storage.WatchOptions{Prefix: "/k/", ProgressNotify: true})
	defer w.Stop()
	select {
	case ev := <-w.Events():
		if ev.Type != storage.Progress || ev.Revision < kv.ModRevision {
			t.Fatalf("want progress at >= %d, got %+v", kv.ModRevision, ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no progress event")
	}
}

// Two stores on one PostgreSQL database, writing concurrently: a watcher on
// each sees every revision exactly once and in order, also while the test
// kills their connections with pg_terminate_backend.
func TestTwoInstancesSeeEveryRevisionInOrder(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(fmt.Sprintf("killConnections=%v", kill), func(t *testing.T) {
			ep := postgresSchema(t)
			a := openStore(t, ep)
			b := openStore(t, ep)
			ctx := ctxT(t)
			start, _ := a.Revision(ctx)
			wa, _ := a.Watch(ctx, storage.WatchOptions{Prefix: "/", AfterRevision: start})
			wb, _ := b.Watch(ctx, storage.WatchOptions{Prefix: "/", AfterRevision: start})
			defer wa.Stop()
			defer wb.Stop()

			stopKill := make(chan struct{})
			var killed atomic.Int64
			app := applicationName(t, ep)
			if kill {
				admin, err := sql.Open("pgx", postgresDSN(t))
				if err != nil {
					t.Fatal(err)
				}
				defer admin.Close()
				go func() {
					for {
						select {
						case <-stopKill:
							return
						case <-time.After(150 * time.Millisecond):
						}
						// Only this test's connections: those whose search_path
						// is this test's schema are the stores' pools and listeners.
						var n int64
						admin.QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
							WHERE application_name = $1`, app).Scan(&n)
						killed.Add(n)
					}
				}()
			}
			var wg sync.WaitGroup
			var failed atomic.Int64
			for i, st := range []*storage.Store{a, b, a, b, a, b, a, b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := 0; j < 60; j++ {
						_, err := st.Create(ctx, fmt.Sprintf("/k/%d/%d", i, j), []byte("v"), 0)
						if err != nil {
							failed.Add(1) // a killed connection may fail a write; it must not break watchers
						}
					}
				}()
			}
			wg.Wait()
			close(stopKill)
			end, err := a.Revision(ctx)
			for err != nil {
				time.Sleep(100 * time.Millisecond)
				end, err = a.Revision(ctx)
			}
			ea := collect(t, wa, end, 60*time.Second)
			eb := collect(t, wb, end, 60*time.Second)
			if int64(len(ea)) != end-start || int64(len(eb)) != end-start {
				t.Fatalf("watchers saw %d and %d events, want %d", len(ea), len(eb), end-start)
			}
			for i := range ea {
				if ea[i].Revision != start+int64(i)+1 || eb[i].Revision != ea[i].Revision || ea[i].KV.Key != eb[i].KV.Key {
					t.Fatalf("event %d differs: %d %s vs %d %s", i, ea[i].Revision, ea[i].KV.Key, eb[i].Revision, eb[i].KV.Key)
				}
			}
			// Every acknowledged or not, what history holds is what watchers saw.
			var rows int64
			a.DB().QueryRowContext(ctx, `SELECT count(*) FROM history WHERE revision > $1`, start).Scan(&rows)
			if rows != end-start {
				t.Fatalf("history has %d rows after %d, watchers saw %d", rows, start, end-start)
			}
			t.Logf("%d revisions, %d failed writes, %d connections killed", end-start, failed.Load(), killed.Load())
		})
	}
}

func applicationName(t *testing.T, dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("application_name")
}

func TestWatchAfterCompactedRevisionFails(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		s := openStore(t, b.endpoint(t))
		ctx := ctxT(t)
		var kvs []*storage.KeyValue
		for i := 0; i < 10; i++ {
			kv, _ := s.Create(ctx, fmt.Sprintf("/k/%d", i), []byte("v"), 0)
			kvs = append(kvs, kv)
		}
		if err := s.Compact(ctx, kvs[5].ModRevision); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Watch(ctx, storage.WatchOptions{Prefix: "/k/", AfterRevision: kvs[2].ModRevision}); !errors.Is(err, storage.ErrCompacted) {
			t.Fatalf("watch below floor: %v", err)
		}
		w, err := s.Watch(ctx, storage.WatchOptions{Prefix: "/k/", AfterRevision: kvs[5].ModRevision})
		if err != nil {
			t.Fatal(err)
		}
		collect(t, w, kvs[9].ModRevision, 5*time.Second)
		w.Stop()
	})
}

// Next hands over everything queued in one call (the API server writes it
// with one flush), in order, on the caller's goroutine.
func TestNextHandsOverEveryQueuedEventAtOnce(t *testing.T) {
	s := openStore(t, backends(t)[0].endpoint(t))
	ctx := ctxT(t)
	w, err := s.Watch(ctx, storage.WatchOptions{Prefix: "/registry/pods/"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var last int64
	for i := range 5 {
		// The local watchers have their events before the write returns.
		kv, err := s.Create(ctx, fmt.Sprintf("/registry/pods/p%d", i), []byte("v"), 0)
		if err != nil {
			t.Fatal(err)
		}
		last = kv.ModRevision
	}
	evs, ok := w.Next()
	if !ok {
		t.Fatalf("watch ended: %v", w.Err())
	}
	if len(evs) != 5 || evs[4].Revision != last {
		t.Fatalf("one Next returned %d events (last %+v), want all 5 up to revision %d", len(evs), evs[len(evs)-1], last)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Revision != evs[i-1].Revision+1 {
			t.Errorf("revision %d after %d", evs[i].Revision, evs[i-1].Revision)
		}
	}
	w.Stop()
	if evs, ok := w.Next(); ok || len(evs) != 0 || w.Err() != nil {
		t.Errorf("after Stop: Next = %v, %v; Err %v", evs, ok, w.Err())
	}
}

// A watch has no goroutine that notices its context ending: the context
// itself takes it off the stream, even if nobody calls Next again.
func TestAWatchLeavesTheStreamWhenItsContextEnds(t *testing.T) {
	s := openStore(t, backends(t)[0].endpoint(t))
	ctx, cancel := context.WithCancel(ctxT(t))
	w, err := s.Watch(ctx, storage.WatchOptions{Prefix: "/registry/pods/"})
	if err != nil {
		t.Fatal(err)
	}
	if n := s.LiveWatchers(); n != 1 {
		t.Fatalf("%d live watchers, want 1", n)
	}
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for s.LiveWatchers() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the watcher stayed on the stream after its context ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := s.Create(ctxT(t), "/registry/pods/after", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if evs, ok := w.Next(); ok || len(evs) != 0 || w.Err() != nil {
		t.Errorf("after the context ended: Next = %v, %v; Err %v", evs, ok, w.Err())
	}
}

// A stopped watch is not kept alive by a context that lives on.
func TestAStoppedWatchLeavesItsContext(t *testing.T) {
	s := openStore(t, backends(t)[0].endpoint(t))
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	w, err := s.Watch(ctx, storage.WatchOptions{Prefix: "/registry/pods/"})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	if n := s.LiveWatchers(); n != 0 {
		t.Errorf("%d live watchers after Stop, want 0", n)
	}
	if !storage.WatchReleasedItsContext(w) {
		t.Error("the context still holds the stopped watch")
	}
}

// TestOnCommittedRunsBeforeWatchersSeeTheWrite checks the write option the
// API server uses to hand its watchers the object it has just written: the
// hook sees the written state, runs before a watcher of this process
// receives the event (so what it leaves for them is there when they look),
// and does not run for a write that fails its check.
func TestOnCommittedRunsBeforeWatchersSeeTheWrite(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		s := openStore(t, b.endpoint(t))
		ctx := ctxT(t)
		w, err := s.Watch(ctx, storage.WatchOptions{Prefix: "/registry/leases/"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		var mu sync.Mutex
		hooked := map[int64]string{} // revision -> key=value, as the hook saw them
		hook := storage.OnCommitted(func(kv *storage.KeyValue) {
			mu.Lock()
			defer mu.Unlock()
			hooked[kv.ModRevision] = kv.Key + "=" + string(kv.Value)
		})
		// The watcher looks for the hook's record the moment it receives
		// each event, while the writes go on.
		const writes = 50
		received := make(chan []string, 1)
		go func() {
			var missing []string
			for n := 0; n < writes; {
				select {
				case ev := <-w.Events():
					if ev.Type == storage.Progress {
						continue
					}
					n++
					mu.Lock()
					if got, want := hooked[ev.Revision], ev.KV.Key+"="+string(ev.KV.Value); got != want {
						missing = append(missing, fmt.Sprintf("revision %d: received %s, the hook had seen %q", ev.Revision, want, got))
					}
					mu.Unlock()
				case <-time.After(10 * time.Second):
					missing = append(missing, fmt.Sprintf("timed out after %d events", n))
					n = writes
				}
			}
			received <- missing
		}()
		kv, err := s.Create(ctx, "/registry/leases/a", []byte("0"), 0, hook)
		if err != nil {
			t.Fatal(err)
		}
		stale := kv.ModRevision
		for i := 1; i < writes; i++ {
			if kv, err = s.Update(ctx, "/registry/leases/a", []byte(fmt.Sprint(i)), kv.ModRevision, 0, hook); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Update(ctx, "/registry/leases/a", []byte("stale"), stale, 0, hook); !errors.Is(err, storage.ErrConflict) {
			t.Fatalf("stale update: %v, want a conflict", err)
		}
		if _, err := s.Create(ctx, "/registry/leases/a", []byte("again"), 0, hook); !errors.Is(err, storage.ErrKeyExists) {
			t.Fatalf("second create: %v, want ErrKeyExists", err)
		}
		for _, m := range <-received {
			t.Error(m)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(hooked) != writes {
			t.Errorf("the hook ran for %d writes, want the %d that committed only", len(hooked), writes)
		}
	})
}
