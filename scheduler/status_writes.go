package scheduler

import "sync"

// statusWrites orders the PodScheduled=False writes of a pod's failed
// attempts. They run off the scheduling loop, so two attempts' writes can
// be in flight at once; without an order the older could land last and
// leave the pod saying why an attempt long superseded failed (with no
// further event, for good). kube-scheduler v1.33 writes them in the
// scheduling loop, in order. Here a write is skipped once a later attempt
// of the pod has begun its own, and a pod's writes never overlap.
type statusWrites struct {
	mu   sync.Mutex
	pods map[string]*podStatusWrites
}

type podStatusWrites struct {
	// writing is held during a write.
	writing sync.Mutex
	// latest numbers the pod's last attempt to begin a write, pending
	// counts its writes not yet done; both guarded by statusWrites.mu.
	latest  uint64
	pending int
}

// begin registers a write for the attempt of the pod at key that just
// failed; it must be called in attempt order (from the scheduling loop).
func (w *statusWrites) begin(key string) (*podStatusWrites, uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pods == nil {
		w.pods = map[string]*podStatusWrites{}
	}
	p := w.pods[key]
	if p == nil {
		p = &podStatusWrites{}
		w.pods[key] = p
	}
	p.latest++
	p.pending++
	return p, p.latest
}

// write runs fn, the write begun as seq, unless a later attempt has begun
// one since.
func (w *statusWrites) write(key string, p *podStatusWrites, seq uint64, fn func()) {
	p.writing.Lock()
	w.mu.Lock()
	current := seq == p.latest
	w.mu.Unlock()
	if current {
		fn()
	}
	p.writing.Unlock()
	w.mu.Lock()
	p.pending--
	if p.pending == 0 && w.pods[key] == p {
		delete(w.pods, key)
	}
	w.mu.Unlock()
}

// supersede is called as a later attempt of the pod at key binds it: a
// failed attempt's write not yet run is skipped, and one running is waited
// for, so that none lands after the binding and leaves a bound pod saying
// PodScheduled=False for good (the write is a patch without a
// precondition; kube-scheduler finishes it before its next attempt).
func (w *statusWrites) supersede(key string) {
	w.mu.Lock()
	p := w.pods[key]
	if p != nil {
		p.latest++
	}
	w.mu.Unlock()
	if p != nil {
		p.writing.Lock()
		// Taken only to wait for the running write to end.
		p.writing.Unlock()
	}
}
