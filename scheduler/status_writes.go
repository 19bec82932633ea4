package scheduler

import "sync"

// statusWrites orders the PodScheduled=False writes of a pod's failed
// attempts. They run off the scheduling loop, so two attempts' writes can
// be in flight at once; without an order the older could land last and
// leave the pod saying why an attempt long superseded failed (with no
// further event, for good). kube-scheduler v1.33 writes them in the
// scheduling loop, in order. Here a write is skipped once a later attempt
// of the pod has begun its own, and a pod's writes never overlap.
//
// A skipped write's nominated node is not lost with it: kube-scheduler has
// written it before the pod's next attempt. The next write that runs
// carries the latest nomination not yet written, and a binding that
// supersedes the writes gets it back to write itself.
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
	// nom is the latest nominated node (or clearing of it) an attempt
	// asked for that no write has carried yet, when hasNom; guarded by
	// statusWrites.mu.
	nom    nomination
	hasNom bool
}

// begin registers a write for the attempt of the pod at key that just
// failed, which asks for nom; it must be called in attempt order (from the
// scheduling loop).
func (w *statusWrites) begin(key string, nom nomination) (*podStatusWrites, uint64) {
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
	if nom.override {
		p.nom, p.hasNom = nom, true
	}
	return p, p.latest
}

// write runs fn, the write begun as seq, unless a later attempt has begun
// one since. fn is given the nomination to write: the latest one asked for
// and not yet written, this attempt's or a skipped earlier one's.
func (w *statusWrites) write(key string, p *podStatusWrites, seq uint64, fn func(nom nomination)) {
	p.writing.Lock()
	w.mu.Lock()
	current := seq == p.latest
	nom := keepNomination
	if current && p.hasNom {
		nom, p.hasNom = p.nom, false
	}
	w.mu.Unlock()
	if current {
		fn(nom)
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
// precondition; kube-scheduler finishes it before its next attempt). It
// returns the nomination the skipped writes did not carry, if any, for the
// caller to write once the pod is bound: kube-scheduler's bound preemptor
// shows the node it nominated.
func (w *statusWrites) supersede(key string) (nomination, bool) {
	w.mu.Lock()
	p := w.pods[key]
	var nom nomination
	var had bool
	if p != nil {
		p.latest++
		nom, had = p.nom, p.hasNom
		p.hasNom = false
	}
	w.mu.Unlock()
	if p != nil {
		p.writing.Lock()
		// Taken only to wait for the running write to end.
		p.writing.Unlock()
	}
	return nom, had
}
