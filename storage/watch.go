package storage

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// pollPage is how many history rows one poll query reads.
const pollPage = 1000

// hub is the one watch poller of a process. It owns "rev", the newest revision
// it has dispatched, and fans every event out to the watchers whose prefix
// matches. All dispatching happens under mu, which is what lets a new watcher
// register atomically with respect to the stream.
type hub struct {
	s    *Store
	wake chan struct{}

	mu       sync.Mutex
	rev      int64
	ring     []Event                // the newest events, oldest first, at most cfg.WatchCache
	ringSize int                    // bytes of values held by ring, at most cfg.WatchCacheBytes
	watchers map[*watcher]struct{}  // watchers without a trigger: offered every event
	indexes  map[string]*watchIndex // watchers with a trigger, by its Index
	open     int                    // watches registered and not ended, lagging ones too
	closed   bool
	// hooks are the OnCommitted hooks of this process's writes being
	// committed, by planned revision; dispatch runs each before offering
	// its event, and forgets those the stream has passed.
	hooks map[int64]commitHook
}

// commitHook is one write's OnCommitted hook with what identifies the write
// at its revision: a revision planned but not committed may be committed
// by another server with another value.
type commitHook struct {
	key   string
	value []byte
	f     func(*KeyValue)
}

// watchIndex holds the watchers of one WatchTrigger index by the value
// they want.
type watchIndex struct {
	prefix  string
	fn      func(*KeyValue) (string, bool)
	byValue map[string]map[*watcher]struct{}
}

func newHub(s *Store, rev int64) *hub {
	return &hub{s: s, rev: rev, wake: make(chan struct{}, 1), watchers: map[*watcher]struct{}{}, indexes: map[string]*watchIndex{},
		hooks: map[int64]commitHook{}}
}

// expectHooks holds the OnCommitted hooks of a planned batch's successful
// creates and updates until their events are dispatched, and returns their
// revisions.
func (h *hub) expectHooks(batch []*writeOp, res []writeResult) []int64 {
	var revs []int64
	for i, op := range batch {
		if op.committed == nil || res[i].err != nil || op.kind == opDelete {
			continue
		}
		revs = append(revs, res[i].rev)
	}
	if len(revs) == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, op := range batch {
		if op.committed != nil && res[i].err == nil && op.kind != opDelete {
			h.hooks[res[i].rev] = commitHook{key: op.key, value: op.plain, f: op.committed}
		}
	}
	return revs
}

// dropHooks forgets the hooks of revisions that were not committed.
func (h *hub) dropHooks(revs []int64) {
	if len(revs) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range revs {
		delete(h.hooks, r)
	}
}

// runHookLocked calls the OnCommitted hook held for ev's revision, if ev is
// the write it was planned for.
func (h *hub) runHookLocked(ev Event) {
	hk, ok := h.hooks[ev.Revision]
	if !ok {
		return
	}
	delete(h.hooks, ev.Revision)
	if ev.Type != Deleted && ev.KV.Key == hk.key && bytes.Equal(ev.KV.Value, hk.value) {
		hk.f(ev.KV)
	}
}

// forgetPassedHooksLocked drops hooks of revisions the stream has passed
// without their write (an outcome unknown that was not committed, or
// compacted before this process read it).
func (h *hub) forgetPassedHooksLocked() {
	for r := range h.hooks {
		if r <= h.rev {
			delete(h.hooks, r)
		}
	}
}

func (h *hub) addLocked(w *watcher) {
	t := w.trigger
	if t == nil {
		h.watchers[w] = struct{}{}
		return
	}
	ix := h.indexes[t.Index]
	if ix == nil {
		ix = &watchIndex{prefix: t.Prefix, fn: t.Func, byValue: map[string]map[*watcher]struct{}{}}
		h.indexes[t.Index] = ix
	}
	set := ix.byValue[t.Value]
	if set == nil {
		set = map[*watcher]struct{}{}
		ix.byValue[t.Value] = set
	}
	set[w] = struct{}{}
}

// removeLocked forgets w; it may be called more than once.
func (h *hub) removeLocked(w *watcher) {
	t := w.trigger
	if t == nil {
		delete(h.watchers, w)
		return
	}
	ix := h.indexes[t.Index]
	if ix == nil {
		return
	}
	set := ix.byValue[t.Value]
	delete(set, w)
	if len(set) == 0 {
		delete(ix.byValue, t.Value)
		if len(ix.byValue) == 0 {
			delete(h.indexes, t.Index)
		}
	}
}

// eachLocked calls f for every watcher, with and without a trigger; f may
// remove the watcher it is given.
func (h *hub) eachLocked(f func(*watcher)) {
	for w := range h.watchers {
		f(w)
	}
	for _, ix := range h.indexes {
		for _, set := range ix.byValue {
			for w := range set {
				f(w)
			}
		}
	}
}

// offerLocked hands ev to w if w wants it. A watcher whose queue is full
// is taken off the live stream instead of being dropped: once it has sent
// what it queued it catches up from the ring or history, as a new watch
// does (etcd's "unsynced" watchers). Dropping it would make its client list
// everything again, which under load costs far more than reading what it
// missed, and makes a slow client slower.
func (h *hub) offerLocked(w *watcher, ev Event) {
	if ev.Revision <= w.after || !strings.HasPrefix(ev.KV.Key, w.prefix) {
		return
	}
	if !w.enqueue(ev, h.s.cfg.WatchBuffer) {
		h.removeLocked(w)
		w.lagging, w.lagAfter = true, ev.Revision-1
		w.poke()
	}
}

// offerIndexedLocked hands ev to the watchers of ix that want the value of
// the key before or after the event, or to all of them when a value cannot
// be told. The value is computed once here, not once per watcher.
func (h *hub) offerIndexedLocked(ix *watchIndex, ev Event) {
	if !strings.HasPrefix(ev.KV.Key, ix.prefix) {
		return
	}
	// A Deleted event's KV carries the value it had, the same as PrevKV.
	states := []*KeyValue{ev.KV, ev.PrevKV}
	if ev.Type == Deleted || ev.PrevKV == nil {
		states = states[:1]
	}
	var values [2]string
	for i, kv := range states {
		v, ok := "", len(kv.Value) > 0
		if ok {
			v, ok = ix.fn(kv)
		}
		if !ok {
			for _, set := range ix.byValue {
				for w := range set {
					h.offerLocked(w, ev)
				}
			}
			return
		}
		values[i] = v
	}
	for w := range ix.byValue[values[0]] {
		h.offerLocked(w, ev)
	}
	if len(states) == 2 && values[1] != values[0] {
		for w := range ix.byValue[values[1]] {
			h.offerLocked(w, ev)
		}
	}
}

// wakeUp asks the poller to read new revisions; it never blocks.
func (h *hub) wakeUp() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// pollLoop reads history after h.rev whenever woken and at least every
// PollInterval.
func (h *hub) pollLoop() {
	t := time.NewTicker(h.s.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-h.s.ctx.Done():
			return
		case <-h.wake:
		case <-t.C:
		}
		h.catchUp()
	}
}

func (h *hub) catchUp() {
	for h.s.ctx.Err() == nil {
		h.mu.Lock()
		from := h.rev
		h.mu.Unlock()
		evs, err := h.s.readEvents(h.s.ctx, from, 0, "", pollPage)
		if err != nil {
			if h.s.ctx.Err() == nil {
				h.s.log.Warn("watch poll failed", "after", from, "err", err)
			}
			return
		}
		if len(evs) == 0 {
			return
		}
		h.dispatch(evs)
		if len(evs) < pollPage {
			return
		}
	}
}

// localCommit delivers the events of a batch this process just committed.
// When no other process committed in between (the batch starts right after
// the hub's revision) they are dispatched at once, with no query; otherwise
// the poller reads the revisions in between and these in order.
func (h *hub) localCommit(base int64, evs []Event) {
	if len(evs) == 0 {
		return
	}
	h.mu.Lock()
	direct := h.rev == base
	h.mu.Unlock()
	if direct {
		h.dispatch(evs)
		return
	}
	h.wakeUp()
}

// dispatch appends events to the stream. Events at or below h.rev were
// already dispatched (by the other path) and are skipped. Revisions are dense,
// so a hole means history was compacted under a hub that lagged: every
// watcher is then behind the floor and is told so.
func (h *hub) dispatch(evs []Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// The cache skips what it holds and stops at a hole (invalidated below).
	defer h.s.cache.apply(evs)
	for _, ev := range evs {
		if ev.Revision <= h.rev {
			continue
		}
		if ev.Revision != h.rev+1 {
			h.s.log.Warn("watch stream skipped compacted revisions; restarting watchers", "from", h.rev+1, "to", ev.Revision-1)
			err := fmt.Errorf("%w: revisions %d-%d were compacted before this server read them", ErrCompacted, h.rev+1, ev.Revision-1)
			h.eachLocked(func(w *watcher) { h.dropLocked(w, err) })
			clear(h.ring)
			h.ring, h.ringSize = h.ring[:0], 0
			h.s.cache.invalidate()
			h.s.requestRefill()
		}
		h.rev = ev.Revision
		if len(h.hooks) > 0 {
			h.runHookLocked(ev)
		}
		h.ring = append(h.ring, ev)
		h.ringSize += eventBytes(ev)
		if len(h.ring) > h.s.cfg.WatchCache || h.ringSize > h.s.cfg.WatchCacheBytes {
			h.shrinkRingLocked()
		}
		for w := range h.watchers {
			h.offerLocked(w, ev)
		}
		for _, ix := range h.indexes {
			h.offerIndexedLocked(ix, ev)
		}
	}
	if len(h.hooks) > 0 {
		h.forgetPassedHooksLocked()
	}
}

// shrinkRingLocked drops the oldest quarter of the cache at once (not one
// event per dispatch), and more if the bytes still exceed the bound.
func (h *hub) shrinkRingLocked() {
	drop := max(len(h.ring)/4, 1)
	for _, ev := range h.ring[:drop] {
		h.ringSize -= eventBytes(ev)
	}
	n := copy(h.ring, h.ring[drop:])
	clear(h.ring[n:]) // let the dropped values be collected
	h.ring = h.ring[:n]
	for len(h.ring) > 0 && h.ringSize > h.s.cfg.WatchCacheBytes {
		h.ringSize -= eventBytes(h.ring[0])
		h.ring[0] = Event{}
		h.ring = h.ring[1:]
	}
}

func eventBytes(ev Event) int {
	n := 64
	if ev.KV != nil {
		n += len(ev.KV.Key) + len(ev.KV.Value)
	}
	if ev.PrevKV != nil {
		n += len(ev.PrevKV.Value)
	}
	return n
}

func (h *hub) dropLocked(w *watcher, err error) {
	h.removeLocked(w)
	h.endLocked(w)
	w.fail(err)
}

// endLocked marks w ended for good, and no longer open.
func (h *hub) endLocked(w *watcher) {
	if w.counted && !w.ended {
		h.open--
	}
	w.ended = true
}

func (h *hub) closeAll(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	h.eachLocked(func(w *watcher) { h.dropLocked(w, err) })
}

// watcher is one Watch. Events flow: hub → queue → Next, called by the
// consumer on its own goroutine. A watch has no goroutine of its own: a
// server holds one per informer and per node agent (thousands at scale),
// and each goroutine is a stack that every GC cycle scans and a hand-off
// per event. Events (the channel) is an adapter that runs Next on one.
type watcher struct {
	h        *hub
	ctx      context.Context
	prefix   string
	trigger  *WatchTrigger
	after    int64 // live events at or below this come from the catch-up instead
	progress bool

	// Guarded by the hub's mu: lagging is set when the queue overflowed
	// and the watcher was taken off the stream; events after lagAfter
	// must then come from a catch-up. ended is set when it was removed
	// for good (stopped or failed), so a catch-up must not add it back.
	// counted says it is counted in the hub's open watches.
	lagging  bool
	lagAfter int64
	ended    bool
	counted  bool

	// queue holds live events not yet taken by Next, up to the store's
	// WatchBuffer. It grows with the backlog instead of being allocated at
	// its bound: a server has a watcher per informer and per node agent,
	// and nearly all of them are idle or nearly so.
	qmu    sync.Mutex
	queue  []Event
	notify chan struct{} // capacity 1: "queue is not empty"

	// The consumer's state, touched only by Next.
	pending  *catchUp // events already dispatched that must go first
	tick     *time.Ticker
	sent     bool // events went out since the last tick
	finished bool

	// afterCtx stops the context.AfterFunc that ends a watch with its
	// context; Stop calls it so that a stopped watch is not kept by a
	// long-lived context. Set once Watch has registered it.
	afterCtx atomic.Pointer[func() bool]

	outOnce sync.Once
	out     chan Event

	once    sync.Once
	stopped chan struct{}
	mu      sync.Mutex
	err     error
}

// Events runs Next on a goroutine of its own and hands the events over one
// by one, for consumers that want a channel. A watch is read through Next or
// through Events, not both.
func (w *watcher) Events() <-chan Event {
	w.outOnce.Do(func() {
		w.out = make(chan Event)
		go func() {
			defer close(w.out)
			for {
				evs, ok := w.Next()
				if !ok {
					return
				}
				for _, ev := range evs {
					select {
					case w.out <- ev:
					case <-w.stopped:
						return
					case <-w.ctx.Done():
						return
					}
				}
			}
		}()
	})
	return w.out
}

// enqueue adds a live event for Next; false means the queue is full (the
// watcher is too slow and must be dropped).
func (w *watcher) enqueue(ev Event, limit int) bool {
	w.qmu.Lock()
	if len(w.queue) >= limit {
		w.qmu.Unlock()
		return false
	}
	w.queue = append(w.queue, ev)
	w.qmu.Unlock()
	w.poke()
	return true
}

// poke wakes Next; it never blocks.
func (w *watcher) poke() {
	select {
	case w.notify <- struct{}{}:
	default: // Next has been told already
	}
}

// take returns every queued event, leaving the queue empty.
func (w *watcher) take() []Event {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	evs := w.queue
	w.queue = nil
	return evs
}

// queued reports whether events are waiting for Next.
func (w *watcher) queued() bool {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	return len(w.queue) > 0
}

func (w *watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *watcher) Stop() {
	w.h.mu.Lock()
	w.h.removeLocked(w)
	w.h.endLocked(w)
	w.h.mu.Unlock()
	w.fail(nil)
	if stop := w.afterCtx.Load(); stop != nil {
		(*stop)()
	}
}

func (w *watcher) fail(err error) {
	w.once.Do(func() {
		w.mu.Lock()
		w.err = err
		w.mu.Unlock()
		close(w.stopped)
	})
}

// Watch streams every change under opts.Prefix after opts.AfterRevision.
func (s *Store) Watch(ctx context.Context, opts WatchOptions) (Watch, error) {
	if err := validatePrefix(opts.Prefix, s.cfg.MaxKeyBytes); err != nil {
		return nil, err
	}
	if opts.AfterRevision < 0 {
		return nil, fmt.Errorf("storage: negative watch revision %d", opts.AfterRevision)
	}
	if opts.AfterRevision > 0 {
		_, compact, err := s.meta(ctx, s.d.readDB())
		if err != nil {
			return nil, s.wrap("watch", err)
		}
		if opts.AfterRevision < compact {
			return nil, fmt.Errorf("%w: watch from revision %d (compacted up to %d)", ErrCompacted, opts.AfterRevision, compact)
		}
	}
	if t := opts.Trigger; t != nil && (t.Index == "" || t.Func == nil) {
		return nil, fmt.Errorf("storage: a watch trigger needs an Index and a Func")
	}
	h := s.hub
	w := &watcher{h: h, ctx: ctx, prefix: opts.Prefix, trigger: opts.Trigger, progress: opts.ProgressNotify,
		notify: make(chan struct{}, 1), stopped: make(chan struct{})}

	r, err := h.register(w, opts.AfterRevision)
	if err != nil {
		return nil, err
	}
	w.pending = newCatchUp(r)
	// The watch ends with its context even if its consumer never calls Next
	// again: it leaves the hub then, not at the consumer's next call.
	stop := context.AfterFunc(ctx, w.Stop)
	w.afterCtx.Store(&stop)
	return w, nil
}

// registration is what a watcher registered at some revision must send
// before its live events: the events in (start, upTo], from the ring
// (backlog) or, when the ring does not reach back that far, from history.
type registration struct {
	start    int64
	upTo     int64
	fromRing bool
	backlog  []Event
}

// register adds w to the live stream after revision start (0: from now).
func (h *hub) register(w *watcher, start int64) (registration, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return registration{}, ErrClosed
	}
	if w.ended {
		return registration{}, errWatcherEnded
	}
	if start == 0 {
		start = h.rev
	}
	w.after = max(start, h.rev)
	w.lagging = false
	// Events in (start, h.rev] were dispatched before this watcher existed:
	// take them from the ring if it reaches back far enough, else from SQL.
	c := registration{start: start, upTo: h.rev, fromRing: start >= h.rev || (len(h.ring) > 0 && h.ring[0].Revision <= start+1)}
	if c.fromRing {
		for _, ev := range h.ring {
			if ev.Revision > start && strings.HasPrefix(ev.KV.Key, w.prefix) {
				c.backlog = append(c.backlog, ev)
			}
		}
	}
	h.addLocked(w)
	if !w.counted {
		w.counted = true
		h.open++
	}
	return c, nil
}

// errWatcherEnded: a catch-up found its watcher stopped meanwhile.
var errWatcherEnded = errors.New("storage: watcher ended")

// Next waits for events and returns them in revision order: first those a
// registration found already dispatched, then live ones as the hub queues
// them, all that are queued at once (a consumer can write them out with one
// flush). With ProgressNotify it returns a Progress event when a
// ProgressInterval passed with nothing sent. ok is false once the watch has
// ended: after Stop, after its context ended, or after a terminal error,
// which Err then returns. Next is called from one goroutine at a time.
func (w *watcher) Next() (evs []Event, ok bool) {
	if w.finished {
		return nil, false
	}
	for {
		if w.pending != nil {
			evs, err := w.pending.next(w.ctx, w)
			if err != nil {
				return w.end(err)
			}
			if len(evs) > 0 {
				w.sent = true
				return evs, true
			}
			w.pending = nil
		}
		if w.progress && w.tick == nil {
			w.tick = time.NewTicker(w.h.s.cfg.ProgressInterval)
		}
		var tick <-chan time.Time
		if w.tick != nil {
			tick = w.tick.C
		}
		select {
		case <-w.notify:
			evs := w.take()
			// What the queue held goes out first; what the watcher missed
			// while off the stream follows from a catch-up.
			if err := w.resumeIfLagging(); err != nil {
				return w.end(err)
			}
			if len(evs) > 0 {
				w.sent = true
				return evs, true
			}
		case <-tick:
			if w.sent {
				w.sent = false
				continue
			}
			// Idle: if nothing is queued, everything up to the hub's revision
			// has been delivered (dispatch fills the queue under the same lock).
			w.h.mu.Lock()
			rev, idle := w.h.rev, !w.queued() && !w.lagging
			w.h.mu.Unlock()
			if idle {
				return []Event{{Type: Progress, Revision: rev}}, true
			}
		case <-w.stopped:
			return w.end(nil)
		case <-w.ctx.Done():
			return w.end(nil)
		}
	}
}

// end finishes the watch for Next: err (nil when stopped or its context
// ended) is what Err reports.
func (w *watcher) end(err error) ([]Event, bool) {
	w.finished = true
	if err != nil && !errors.Is(err, errWatcherEnded) {
		w.fail(err)
	}
	w.Stop()
	if w.tick != nil {
		w.tick.Stop()
	}
	return nil, false
}

// catchUp is what a registration found already dispatched, (start, upTo],
// handed out a page at a time: history first when the ring did not reach
// back far enough, then the ring's backlog.
type catchUp struct {
	from, upTo int64
	history    bool
	backlog    []Event
}

func newCatchUp(r registration) *catchUp {
	return &catchUp{from: r.start, upTo: r.upTo, history: !r.fromRing, backlog: r.backlog}
}

// next returns the next page; none once everything was handed out.
func (c *catchUp) next(ctx context.Context, w *watcher) ([]Event, error) {
	if c.history && c.from < c.upTo {
		evs, err := w.h.s.readEvents(ctx, c.from, c.upTo, w.prefix, pollPage)
		if err != nil {
			return nil, fmt.Errorf("watch catch-up: %w", err)
		}
		if len(evs) < pollPage {
			c.history = false
		} else {
			c.from = evs[len(evs)-1].Revision
		}
		if len(evs) > 0 {
			return evs, nil
		}
	}
	c.history = false
	evs := c.backlog
	c.backlog = nil
	return evs, nil
}

// resumeIfLagging puts a watcher that was taken off the stream, and whose
// queue Next has just emptied, back on it: the events it missed become a
// catch-up that Next hands out next. A revision compacted meanwhile ends it
// (its client lists).
func (w *watcher) resumeIfLagging() error {
	h := w.h
	h.mu.Lock()
	lagging, start := w.lagging, w.lagAfter
	h.mu.Unlock()
	if !lagging || w.queued() {
		return nil // not lagging, or Next will be poked again for the rest
	}
	_, compact, err := h.s.meta(w.ctx, h.s.d.readDB())
	if err == nil && start < compact {
		err = fmt.Errorf("%w: watcher fell behind past compacted revision %d", ErrCompacted, compact)
	}
	if err != nil {
		return err
	}
	h.s.log.Info("a watcher fell more than the watch buffer behind; catching it up from the store", "prefix", w.prefix, "after", start, "buffer", h.s.cfg.WatchBuffer)
	r, err := h.register(w, start)
	if err != nil {
		return err
	}
	w.pending = newCatchUp(r)
	return nil
}

// readEvents reads history rows in (after, upTo] (upTo 0: no bound) under a
// prefix as events, with previous values, decrypted.
func (s *Store) readEvents(ctx context.Context, after, upTo int64, prefix string, limit int) ([]Event, error) {
	if upTo == 0 {
		upTo = 1<<63 - 1
	}
	lo, hi := prefixRange(prefix)
	rows, err := s.d.readDB().QueryContext(ctx, s.q.readEvents, after, upTo, lo, hi, limit)
	if err != nil {
		return nil, s.wrap("read events", err)
	}
	defer rows.Close()
	var evs []Event
	for rows.Next() {
		var (
			rev, create, version, prevRev int64
			key, op                       string
			value, pValue                 []byte
			exp, pCreate, pVersion, pExp  sql.NullInt64
		)
		if err := rows.Scan(&rev, &key, &op, &value, &create, &version, &exp, &prevRev, &pValue, &pCreate, &pVersion, &pExp); err != nil {
			return nil, s.wrap("read events", err)
		}
		ev := Event{Revision: rev}
		if prevRev != 0 && pCreate.Valid {
			prev, err := s.opened(&KeyValue{Key: key, Value: pValue, CreateRevision: pCreate.Int64, ModRevision: prevRev, Version: pVersion.Int64, ExpiresAt: msTime(pExp)})
			if err != nil {
				return nil, err
			}
			ev.PrevKV = prev
		}
		switch op {
		case "create", "update":
			ev.Type = Created
			if op == "update" {
				ev.Type = Updated
			}
			kv, err := s.opened(&KeyValue{Key: key, Value: value, CreateRevision: create, ModRevision: rev, Version: version, ExpiresAt: msTime(exp)})
			if err != nil {
				return nil, err
			}
			ev.KV = kv
		case "delete":
			ev.Type = Deleted
			gone := &KeyValue{Key: key, CreateRevision: create, ModRevision: rev, Version: version}
			if ev.PrevKV != nil {
				gone.Value, gone.ExpiresAt = ev.PrevKV.Value, ev.PrevKV.ExpiresAt
			}
			ev.KV = gone
		default:
			return nil, fmt.Errorf("storage: history revision %d has unknown op %q", rev, op)
		}
		evs = append(evs, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("read events", err)
	}
	return evs, nil
}
