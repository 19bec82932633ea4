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
// Workers are started as requests need them, up to a limit, and never
// stop before Close: hundreds of node agents write at once, so a busy
// server has hundreds of requests in flight (at 1,000 hollow nodes up to
// ~800, most waiting on a commit), and a fixed 64 workers left a third of
// the requests to grow fresh stacks. Idle workers wait on a stack, not a
// queue: the one that finished last serves next, so a lightly loaded
// server keeps reusing a few warm workers while the others' stacks shrink
// back at garbage collection (the runtime halves an idle goroutine's stack
// at each cycle); handing work round-robin would regrow every one of them.
//
// Only short requests are handed over: a watch or a stream would hold a
// worker for minutes. When every worker is busy the request simply runs on
// its own goroutine as before, so the pool never queues or delays anything.
package warmstack

import (
	"net/http"
	"sync"
)

// Pool is a set of worker goroutines.
type Pool struct {
	mu      sync.Mutex
	idle    []*worker // the most recently released last
	started int       // workers running, idle or not
	limit   int
	closed  bool
	wg      sync.WaitGroup // running workers
}

// worker is one goroutine of the pool; jobs holds at most the one job it
// was acquired for.
type worker struct {
	jobs chan *job
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

// New returns a pool that starts up to limit workers; Close stops them.
func New(limit int) *Pool {
	return &Pool{limit: limit}
}

// Close tells the workers to exit once they finish what they are serving;
// it does not wait for them (a handler stuck past the server's shutdown
// must not hold up the process's exit). Requests after Close run on their
// own goroutines.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	for _, w := range p.idle {
		close(w.jobs)
	}
	p.idle = nil
}

// acquire returns the most recently idle worker, a new one when none is
// idle and the limit allows, or nil.
func (p *Pool) acquire() *worker {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		return w
	}
	if p.started == p.limit {
		return nil
	}
	p.started++
	w := &worker{jobs: make(chan *job, 1)}
	p.wg.Add(1)
	go p.work(w)
	return w
}

// release puts w back on top of the idle stack; false means the pool is
// closed and w is to exit.
func (p *Pool) release(w *worker) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		p.started--
		return false
	}
	p.idle = append(p.idle, w)
	return true
}

func (p *Pool) work(w *worker) {
	defer p.wg.Done()
	for j := range w.jobs {
		j.serve()
		// Idle again before the caller hears it is done, so the caller's
		// next request (HTTP/2 streams often come one after another) finds
		// this worker, whose stack is the warm one.
		ok := p.release(w)
		j.done <- struct{}{}
		if !ok {
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
	}()
	j.h.ServeHTTP(j.w, j.r)
}

// Handler serves requests with next, on a worker when short(r) says the
// request is short and a worker is idle or may be started, else on the
// caller's goroutine.
func (p *Pool) Handler(next http.Handler, short func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !short(r) {
			next.ServeHTTP(w, r)
			return
		}
		wk := p.acquire()
		if wk == nil {
			next.ServeHTTP(w, r)
			return
		}
		j := jobs.Get().(*job)
		j.h, j.w, j.r = next, w, r
		wk.jobs <- j
		<-j.done
		v := j.panic
		*j = job{done: j.done}
		jobs.Put(j)
		if v != nil {
			panic(v)
		}
	})
}
