// Package warmstack runs short HTTP handlers on a set of long-lived
// goroutines instead of the goroutine net/http starts for each request.
//
// Why: every HTTP/2 request gets a fresh goroutine with a small stack, and
// serving an API write (authentication, admission, managed fields, JSON and
// protobuf codecs) needs tens of kilobytes of it, so each request grows its
// stack four or five times, copying it each time. Under load that copying
// (runtime.newstack → copystack) was ~4% of the API server's CPU. A worker
// that has served a request keeps its grown stack for the next one. grpc-go
// offers the same remedy as its NumStreamWorkers server option.
//
// Only short requests are handed over: a watch or a stream would hold a
// worker for minutes. When every worker is busy the request simply runs on
// its own goroutine as before, so the pool never queues or delays anything.
package warmstack

import (
	"net/http"
	"sync"
)

// Pool is a fixed set of worker goroutines.
type Pool struct {
	jobs chan *job
	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup // running workers
}

// job is one request handed to a worker. The caller's goroutine waits on
// done, so the handler's use of the ResponseWriter still ends before the
// caller returns to net/http, exactly as when it runs inline.
type job struct {
	h     http.Handler
	w     http.ResponseWriter
	r     *http.Request
	done  chan struct{}
	panic any // a panic in the handler, re-raised on the caller's goroutine
}

var jobs = sync.Pool{New: func() any { return &job{done: make(chan struct{}, 1)} }}

// New starts workers goroutines; Close stops them.
func New(workers int) *Pool {
	p := &Pool{jobs: make(chan *job), stop: make(chan struct{})}
	p.wg.Add(workers)
	for range workers {
		go p.work()
	}
	return p
}

// Close tells the workers to exit once they finish what they are serving;
// it does not wait for them (a handler stuck past the server's shutdown
// must not hold up the process's exit). Requests after Close run on their
// own goroutines.
func (p *Pool) Close() {
	p.once.Do(func() { close(p.stop) })
}

func (p *Pool) work() {
	defer p.wg.Done()
	for {
		select {
		case j := <-p.jobs:
			j.serve()
		case <-p.stop:
			return
		}
	}
}

func (j *job) serve() {
	defer func() {
		// Carry a panic to the request's own goroutine: net/http's
		// handling of it (http.ErrAbortHandler resets the stream, anything
		// else is logged) must happen there, and a panic here would end
		// the process.
		j.panic = recover()
		j.done <- struct{}{}
	}()
	j.h.ServeHTTP(j.w, j.r)
}

// Handler serves requests with next, on a worker when short(r) says the
// request is short and a worker is idle, else on the caller's goroutine.
func (p *Pool) Handler(next http.Handler, short func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !short(r) {
			next.ServeHTTP(w, r)
			return
		}
		j := jobs.Get().(*job)
		j.h, j.w, j.r = next, w, r
		select {
		case p.jobs <- j:
			<-j.done
		default:
			next.ServeHTTP(w, r)
		}
		v := j.panic
		*j = job{done: j.done}
		jobs.Put(j)
		if v != nil {
			panic(v)
		}
	})
}
