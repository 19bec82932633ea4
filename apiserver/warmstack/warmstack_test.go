package warmstack

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// onWorker reports whether the calling goroutine is one of a pool's workers.
func onWorker() bool {
	buf := make([]byte, 64<<10)
	return strings.Contains(string(buf[:runtime.Stack(buf, false)]), "warmstack.(*Pool).work")
}

func short(v bool) func(*http.Request) bool { return func(*http.Request) bool { return v } }

// goroutineID is the calling goroutine's number, from its stack's header.
func goroutineID() string {
	buf := make([]byte, 64)
	return strings.Fields(string(buf[:runtime.Stack(buf, false)]))[1]
}

func TestShortRequestRunsOnAWorkerAndAnswers(t *testing.T) {
	p := New(2)
	defer p.Close()
	var worker bool
	h := p.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		worker = onWorker()
		w.Header().Set("X-Test", "yes")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte("body"))
	}), short(true))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/api/v1/namespaces/a/pods", nil))
	if !worker {
		t.Fatal("a short request with an idle worker ran on its own goroutine")
	}
	if rec.Code != http.StatusCreated || rec.Body.String() != "body" || rec.Header().Get("X-Test") != "yes" {
		t.Fatalf("response = %d %q %v", rec.Code, rec.Body.String(), rec.Header())
	}
}

func TestLongRequestKeepsItsGoroutine(t *testing.T) {
	p := New(2)
	defer p.Close()
	var worker bool
	h := p.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { worker = onWorker() }),
		short(false))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/v1/pods?watch=true", nil))
	if worker {
		t.Fatal("a long request was handed to a worker")
	}
}

func TestBusyWorkersMeanInline(t *testing.T) {
	p := New(1)
	defer p.Close()
	release := make(chan struct{})
	started := make(chan bool)
	h := p.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- onWorker()
		if r.URL.Path == "/block" {
			<-release
		}
	}), short(true))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/block", nil))
	}()
	if !<-started {
		t.Fatal("first request did not get the idle worker")
	}
	// The only worker is busy: the next request must not wait for it.
	done := make(chan struct{})
	go func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/other", nil)); close(done) }()
	if <-started {
		t.Fatal("second request ran on the busy worker")
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("second request waited for the busy worker")
	}
	close(release)
	wg.Wait()
}

func TestPanicReachesTheCallersGoroutine(t *testing.T) {
	p := New(1)
	defer p.Close()
	h := p.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }), short(true))
	got := func() (v any) {
		defer func() { v = recover() }()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
		return nil
	}()
	if got != http.ErrAbortHandler {
		t.Fatalf("recovered %v, want http.ErrAbortHandler", got)
	}
	// The worker survived and serves the next request.
	var worker bool
	h2 := p.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { worker = onWorker() }), short(true))
	h2.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if !worker {
		t.Fatal("the worker did not survive a handler's panic")
	}
}

func TestAfterCloseRequestsRunInline(t *testing.T) {
	p := New(2)
	p.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), short(true)).
		ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if p.started != 1 {
		t.Fatalf("%d workers started for one request, want 1", p.started)
	}
	p.Close()
	p.wg.Wait() // the idle worker exits
	var worker, ran bool
	h := p.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran, worker = true, onWorker() }), short(true))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if !ran || worker {
		t.Fatalf("after Close: ran=%v on worker=%v, want inline", ran, worker)
	}
}

// blockingHandler reports the goroutine of each request on started and
// blocks requests to /block/* until their path is released.
type blockingHandler struct {
	started chan string
	mu      sync.Mutex
	release map[string]chan struct{}
}

func newBlockingHandler() *blockingHandler {
	return &blockingHandler{started: make(chan string), release: map[string]chan struct{}{}}
}

func (b *blockingHandler) gate(path string) chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.release[path] == nil {
		b.release[path] = make(chan struct{})
	}
	return b.release[path]
}

func (b *blockingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := goroutineID()
	if !onWorker() {
		id = "inline"
	}
	b.started <- id
	if strings.HasPrefix(r.URL.Path, "/block/") {
		<-b.gate(r.URL.Path)
	}
}

func TestWorkersStartAsNeededUpToTheLimit(t *testing.T) {
	p := New(3)
	defer p.Close()
	b := newBlockingHandler()
	h := p.Handler(b, short(true))
	var wg sync.WaitGroup
	serve := func(path string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
		}()
	}
	seen := map[string]bool{}
	for _, path := range []string{"/block/1", "/block/2", "/block/3"} {
		serve(path)
		id := <-b.started
		if id == "inline" || seen[id] {
			t.Fatalf("request %s ran on %q, want a worker of its own (seen %v)", path, id, seen)
		}
		seen[id] = true
	}
	serve("/4")
	if id := <-b.started; id != "inline" {
		t.Fatalf("a request past the limit of 3 busy workers ran on worker %s, want inline", id)
	}
	for _, path := range []string{"/block/1", "/block/2", "/block/3"} {
		close(b.gate(path))
	}
	wg.Wait()
	if p.started != 3 {
		t.Fatalf("%d workers started, want 3", p.started)
	}
}

// The worker released last serves the next request: its stack is the one
// that has not shrunk.
func TestLastIdleWorkerServesNext(t *testing.T) {
	p := New(2)
	defer p.Close()
	b := newBlockingHandler()
	h := p.Handler(b, short(true))
	finished := map[string]chan struct{}{}
	ids := map[string]string{}
	for _, path := range []string{"/block/a", "/block/b"} {
		done := make(chan struct{})
		finished[path] = done
		go func() {
			defer close(done)
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
		}()
		ids[path] = <-b.started
	}
	// a finishes first, then b: b is on top of the idle stack.
	for _, path := range []string{"/block/a", "/block/b"} {
		close(b.gate(path))
		<-finished[path]
	}
	for range 3 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/next", nil))
		}()
		if id := <-b.started; id != ids["/block/b"] {
			t.Fatalf("next request ran on %s, want %s, the worker released last (a's was %s)", id, ids["/block/b"], ids["/block/a"])
		}
		<-done // its worker is idle again before the request ends
	}
}
