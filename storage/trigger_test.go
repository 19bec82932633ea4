package storage_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffkube/skiff/storage"
)

// nodeOf is the trigger function of these tests: values are "node/rest";
// a value without a slash cannot be told.
func nodeOf(kv *storage.KeyValue) (string, bool) {
	node, _, ok := strings.Cut(string(kv.Value), "/")
	return node, ok
}

func triggered(node string) *storage.WatchTrigger {
	return &storage.WatchTrigger{Index: "test-node", Prefix: "/registry/pods/", Func: nodeOf, Value: node}
}

// summary renders events as "type key value" lines for comparison.
func summary(evs []storage.Event) string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Type.String()+" "+ev.KV.Key+" "+string(ev.KV.Value))
	}
	return strings.Join(out, "\n")
}

// A watch with a trigger is handed the events of the keys whose value maps
// to its value before or after the change — a pod moving from node a to
// node b is seen by both — and those whose value cannot be told, but not
// the others; a watch without a trigger still sees everything.
func TestWatchTriggerHandsOutOnlyMatchingEvents(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		s := openStore(t, b.endpoint(t))
		ctx := ctxT(t)
		watch := func(opts storage.WatchOptions) storage.Watch {
			w, err := s.Watch(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Stop)
			return w
		}
		all := watch(storage.WatchOptions{Prefix: "/registry/pods/"})
		onA := watch(storage.WatchOptions{Prefix: "/registry/pods/", Trigger: triggered("a")})
		onB := watch(storage.WatchOptions{Prefix: "/registry/pods/", Trigger: triggered("b")})
		onB2 := watch(storage.WatchOptions{Prefix: "/registry/pods/ns/", Trigger: triggered("b")})
		onC := watch(storage.WatchOptions{Prefix: "/registry/pods/", Trigger: triggered("c")})

		p1, _ := s.Create(ctx, "/registry/pods/ns/p1", []byte("a/1"), 0)
		s.Create(ctx, "/registry/pods/ns/p2", []byte("b/1"), 0)
		s.Create(ctx, "/registry/configmaps/ns/c", []byte("a/not-a-pod"), 0)
		p1b, _ := s.Update(ctx, "/registry/pods/ns/p1", []byte("b/2"), p1.ModRevision, 0)
		s.Create(ctx, "/registry/pods/other/p3", []byte("unknown"), 0)
		_, last, err := s.Delete(ctx, "/registry/pods/ns/p1", p1b.ModRevision)
		if err != nil {
			t.Fatal(err)
		}
		// A sentinel every watch sees, so each can be read up to the end.
		end, _ := s.Create(ctx, "/registry/pods/ns/zz", []byte("unknown"), 0)
		if end.ModRevision <= last {
			t.Fatal("revisions out of order")
		}
		read := func(w storage.Watch) string {
			evs := collect(t, w, end.ModRevision, 10*time.Second)
			return summary(evs[:len(evs)-1])
		}
		for _, c := range []struct {
			name string
			w    storage.Watch
			want []string
		}{
			{"no trigger", all, []string{"create /registry/pods/ns/p1 a/1", "create /registry/pods/ns/p2 b/1", "update /registry/pods/ns/p1 b/2", "create /registry/pods/other/p3 unknown", "delete /registry/pods/ns/p1 b/2"}},
			{"node a", onA, []string{"create /registry/pods/ns/p1 a/1", "update /registry/pods/ns/p1 b/2", "create /registry/pods/other/p3 unknown"}},
			{"node b", onB, []string{"create /registry/pods/ns/p2 b/1", "update /registry/pods/ns/p1 b/2", "create /registry/pods/other/p3 unknown", "delete /registry/pods/ns/p1 b/2"}},
			{"node b in ns", onB2, []string{"create /registry/pods/ns/p2 b/1", "update /registry/pods/ns/p1 b/2", "delete /registry/pods/ns/p1 b/2"}},
			{"node c", onC, []string{"create /registry/pods/other/p3 unknown"}},
		} {
			if got, want := read(c.w), strings.Join(c.want, "\n"); got != want {
				t.Errorf("%s: got\n%s\nwant\n%s", c.name, got, want)
			}
		}
	})
}

// Stopping triggered watches leaves the others working, and a trigger
// without a function is refused.
func TestWatchTriggerStopAndValidation(t *testing.T) {
	s := openStore(t, backends(t)[0].endpoint(t))
	ctx := ctxT(t)
	if _, err := s.Watch(ctx, storage.WatchOptions{Prefix: "/registry/pods/", Trigger: &storage.WatchTrigger{Index: "x", Value: "a"}}); err == nil {
		t.Fatal("a trigger without Func was accepted")
	}
	first, _ := s.Watch(ctx, storage.WatchOptions{Prefix: "/registry/pods/", Trigger: triggered("a")})
	second, _ := s.Watch(ctx, storage.WatchOptions{Prefix: "/registry/pods/", Trigger: triggered("a")})
	defer second.Stop()
	first.Stop()
	first.Stop()
	kv, _ := s.Create(ctx, "/registry/pods/ns/p", []byte("a/1"), 0)
	if got := summary(collect(t, second, kv.ModRevision, 10*time.Second)); got != "create /registry/pods/ns/p a/1" {
		t.Fatalf("second watch got %q", got)
	}
	if _, ok := <-first.Events(); ok {
		t.Fatal("a stopped watch still delivers")
	}
}

// BenchmarkWatchFanOutByNode is a thousand kubelets' pod watches (one per
// node) while pods are written on random nodes: with a trigger each event
// reaches the one watch of its node; without, every watch receives every
// event and its consumer must drop 999 of 1,000. Reports events handed to
// watch consumers per write.
func BenchmarkWatchFanOutByNode(b *testing.B) {
	const nodes = 1000
	for _, indexed := range []bool{false, true} {
		b.Run(fmt.Sprintf("indexed=%v", indexed), func(b *testing.B) {
			s := openStore(b, b.TempDir()+"/state.db", func(c *storage.Config) { c.WatchBuffer = 1 << 14 })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var received atomic.Int64
			var wg sync.WaitGroup
			for n := 0; n < nodes; n++ {
				opts := storage.WatchOptions{Prefix: "/registry/pods/"}
				if indexed {
					opts.Trigger = triggered(fmt.Sprint(n))
				}
				w, err := s.Watch(ctx, opts)
				if err != nil {
					b.Fatal(err)
				}
				defer w.Stop()
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ev := range w.Events() {
						received.Add(1)
						if node, _ := nodeOf(ev.KV); node == "last" {
							return
						}
					}
				}()
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Create(ctx, fmt.Sprintf("/registry/pods/ns/p%d", i), []byte(fmt.Sprintf("%d/pod", i%nodes)), 0); err != nil {
					b.Fatal(err)
				}
			}
			// A value no trigger can tell reaches every watch and ends it.
			if _, err := s.Create(ctx, "/registry/pods/ns/zz", []byte("last"), 0); err != nil {
				b.Fatal(err)
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(received.Load()-nodes)/float64(b.N), "deliveries/write")
		})
	}
}
