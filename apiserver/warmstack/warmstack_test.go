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

// waitIdle gives the workers time to park on the job channel after New.
func waitIdle() { time.Sleep(20 * time.Millisecond) }

func TestShortRequestRunsOnAWorkerAndAnswers(t *testing.T) {
	p := New(2)
	defer p.Close()
	waitIdle()
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
	waitIdle()
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
	waitIdle()
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
	waitIdle()
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
	waitIdle()
	h2.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if !worker {
		t.Fatal("the worker did not survive a handler's panic")
	}
}

func TestAfterCloseRequestsRunInline(t *testing.T) {
	p := New(2)
	waitIdle()
	p.Close()
	p.wg.Wait()
	var worker, ran bool
	h := p.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran, worker = true, onWorker() }), short(true))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if !ran || worker {
		t.Fatalf("after Close: ran=%v on worker=%v, want inline", ran, worker)
	}
}
