package sharedinformers

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// seen records the names of the ConfigMaps a handler was told about.
type seen struct {
	mu    sync.Mutex
	names map[string]int
}

func (s *seen) handler() cache.ResourceEventHandler {
	add := func(obj any) {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			s.mu.Lock()
			s.names[cm.Name]++
			s.mu.Unlock()
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }}
}

func (s *seen) has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names[name] > 0
}

func (s *seen) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.names)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 15*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// startPool runs a real API server and a pool of informers on it; the
// pool's context ends, and its informers stop, when the test does.
func startPool(t *testing.T) (kubernetes.Interface, context.Context, *Pool) {
	t.Helper()
	srv := apiservertest.Start(t)
	client, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pool := New(ctx, informers.NewSharedInformerFactory(client, 0))
	t.Cleanup(func() {
		cancel() // the informers stop with ctx
		pool.Shutdown()
	})
	return client, ctx, pool
}

// Against a real API server: two views share one informer (one cache), a
// view's handlers get events only between its Start and its Shutdown, and
// the informer keeps serving the other view after one shut down.
func TestViewsShareInformersAndScopeHandlersToTheirTerm(t *testing.T) {
	client, ctx, pool := startPool(t)
	create := func(name string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("before")

	a, b := pool.View(0), pool.View(0)
	infA := a.Core().V1().ConfigMaps().Informer()
	infB := b.Core().V1().ConfigMaps().Informer()
	if infA.GetIndexer() != infB.GetIndexer() {
		t.Fatal("the two views' ConfigMap informers have separate caches; want one shared")
	}
	var seenA, seenB seen
	seenA.names, seenB.names = map[string]int{}, map[string]int{}
	regA, err := infA.AddEventHandler(seenA.handler())
	if err != nil {
		t.Fatal(err)
	}
	regB, err := infB.AddEventHandler(seenB.handler())
	if err != nil {
		t.Fatal(err)
	}
	bSynced := regB.HasSyncedChecker().Done() // asked before B starts
	// The same named indexer from both views (a controller of a later
	// term asks for what the first one added): no conflict.
	byName := cache.Indexers{"name": func(obj any) ([]string, error) { return []string{obj.(*corev1.ConfigMap).Name}, nil }}
	if err := infA.AddIndexers(byName); err != nil {
		t.Fatal(err)
	}
	if err := infB.AddIndexers(byName); err != nil {
		t.Fatalf("the second view's identical indexer: %v", err)
	}

	// A starts (it leads); B waits for its Lease and must see nothing.
	a.Start(ctx.Done())
	waitFor(t, "view A to sync", regA.HasSynced)
	if !seenA.has("before") {
		t.Fatal("view A's handler missed the ConfigMap that existed before it started")
	}
	create("while-a-leads")
	waitFor(t, "view A to see a new ConfigMap", func() bool { return seenA.has("while-a-leads") })
	if n := seenB.count(); n != 0 {
		t.Fatalf("view B, not started, got events for %d ConfigMaps; want none", n)
	}

	// B starts too: its handler gets the current state from the cache.
	b.Start(ctx.Done())
	select {
	case <-bSynced:
	case <-time.After(15 * time.Second):
		t.Fatal("view B's sync checker, asked before it started, never reported synced")
	}
	waitFor(t, "view B to see the existing ConfigMaps", func() bool { return seenB.has("before") && seenB.has("while-a-leads") })

	// A's term ends: its handler is removed, B's keeps getting events
	// from the same, still running, informer.
	a.Shutdown()
	create("after-a")
	waitFor(t, "view B to see a ConfigMap created after A shut down", func() bool { return seenB.has("after-a") })
	if items, err := infB.GetIndexer().ByIndex("name", "after-a"); err != nil || len(items) != 1 {
		t.Fatalf("shared index after A shut down: %v, %v", items, err)
	}
	time.Sleep(200 * time.Millisecond) // A's handler would have had it by now
	if seenA.has("after-a") {
		t.Fatal("view A's handler got an event after A shut down")
	}

	// A handler added to a view after its Shutdown is never registered.
	var late seen
	late.names = map[string]int{}
	if _, err := infA.AddEventHandler(late.handler()); err != nil {
		t.Fatal(err)
	}
	create("late")
	waitFor(t, "view B to see the last ConfigMap", func() bool { return seenB.has("late") })
	time.Sleep(200 * time.Millisecond)
	if n := late.count(); n != 0 {
		t.Fatalf("a handler added after Shutdown got events for %d ConfigMaps", n)
	}
	if !regA.HasSynced() {
		t.Fatal("A's registration reports not synced after Shutdown; it had synced")
	}
}

// A handler's sync checker asked before its view starts waits for the view,
// but not past the view's Shutdown or the pool's end: a view that never
// starts (its loop never got the Lease) leaves no goroutine behind.
func TestPendingSyncCheckerEndsWithViewOrPool(t *testing.T) {
	// The informers never run in this test, so the client is never used.
	client, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, end := range []string{"view shutdown", "pool end"} {
		t.Run(end, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pool := New(ctx, informers.NewSharedInformerFactory(client, 0))
			view := pool.View(0)
			reg, err := view.Core().V1().ConfigMaps().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{})
			if err != nil {
				t.Fatal(err)
			}
			done := reg.HasSyncedChecker().Done()
			if end == "view shutdown" {
				view.Shutdown()
			} else {
				cancel()
			}
			goleak.VerifyNone(t, before)
			select {
			case <-done:
				t.Fatal("the checker reports synced for a handler that never was")
			default:
			}
		})
	}
}

// Existing hands out only informers some view asked for, seen through the
// asking view: a handler added through it follows that view's term, and an
// informer asked for by a view that never started runs once a started view
// takes it.
func TestExistingFindsOnlyInformersAskedFor(t *testing.T) {
	client, ctx, pool := startPool(t)
	idle, taker := pool.View(0), pool.View(0)
	taker.Start(ctx.Done())
	if _, ok := taker.Existing(&corev1.ConfigMap{}); ok {
		t.Fatal("Existing found a configmap informer nobody asked for")
	}
	idle.Core().V1().ConfigMaps().Informer() // asked for, never started by its view
	inf, ok := taker.Existing(&corev1.ConfigMap{})
	if !ok {
		t.Fatal("Existing did not find the configmap informer another view asked for")
	}
	if _, ok := taker.Existing(&corev1.Secret{}); ok {
		t.Fatal("Existing found a secret informer nobody asked for")
	}
	s := &seen{names: map[string]int{}}
	if _, err := inf.AddEventHandler(s.handler()); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the handler to see configmap a", func() bool { return s.has("a") })
	taker.Shutdown()
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the shared cache to hold configmap b", func() bool {
		_, ok, _ := inf.GetStore().GetByKey("default/b")
		return ok
	})
	if s.has("b") {
		t.Fatal("a handler added through Existing outlived its view's term")
	}
}
