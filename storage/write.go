package storage

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"time"
)

// Group commit limits: a batch closes at this many operations or value bytes,
// whichever comes first.
const (
	maxBatchOps   = 256
	maxBatchBytes = 8 << 20
	// writeAttempts bounds retries of a batch that failed before COMMIT (for
	// example a PostgreSQL connection killed mid-transaction); nothing of it
	// was committed, so it is safe to run again.
	writeAttempts = 4
	// maxLinger caps how long a small batch waits for more operations.
	maxLinger = 2 * time.Millisecond
	// A busy store's batch waits for up to busyBatchOps operations, each
	// within busyGap of the one before, for at most busyLinger (see
	// writeLoop).
	busyBatchOps = 32
	busyGap      = time.Millisecond
	busyLinger   = 2 * time.Millisecond
)

type opKind int

const (
	opCreate opKind = iota
	opUpdate
	opDelete
)

type writeOp struct {
	kind   opKind
	key    string
	plain  []byte // the caller's value
	sealed []byte // what is stored
	expect int64  // CAS: the key's current ModRevision; 0 = any
	ttl    time.Duration
	actor  string
	done   chan writeResult // buffered: the writer never blocks on a caller
	// committed, if set, is called with the written state before this
	// process's watchers are handed its event (see OnCommitted).
	committed func(*KeyValue)
	// handedOver: the caller gave the store its value (see HandOver).
	handedOver bool
}

// A WriteOption changes how one write is made.
type WriteOption func(*writeOp)

// OnCommitted has f called with the written state once the write has
// committed, before any watcher of this process is handed its event: a
// caller that holds the value's decoded form can leave it where the
// watchers will look, so they need not decode the value again. Whichever
// path of this process dispatches the event first calls f: the writer, or
// the watch poller, which on PostgreSQL may read the commit before the
// writer is back from it. f runs under the watch hub's lock, so it must be
// quick and must not call the store. It is not called for a write that
// fails its check or whose transaction fails; when the commit's outcome is
// unknown it is called only if the write shows up in the history. f only
// ever sees a state with the write's key and value.
func OnCommitted(f func(kv *KeyValue)) WriteOption {
	return func(op *writeOp) { op.committed = f }
}

// HandOver gives the store the write's value instead of a copy of it: the
// caller promises never to change (or reuse) the slice again. The value
// lives on in the watch ring and the list cache; a caller that encoded it
// into a slice of its own for this write spares the store copying every
// object written once more.
func HandOver() WriteOption {
	return func(op *writeOp) { op.handedOver = true }
}

type writeResult struct {
	kv  *KeyValue // new state (create/update), deleted state (delete), or current state on conflict
	rev int64     // the revision of a successful write
	err error
}

// ErrUnknownOutcome: the connection broke during COMMIT, so the write may or
// may not have been applied. Read the key to find out.
var ErrUnknownOutcome = errors.New("storage: commit outcome unknown (connection lost during commit)")

// Create stores a new key. ttl > 0 deletes it that long after its last write.
func (s *Store) Create(ctx context.Context, key string, value []byte, ttl time.Duration, opts ...WriteOption) (*KeyValue, error) {
	r := s.submit(ctx, &writeOp{kind: opCreate, key: key, plain: value, ttl: ttl}, opts)
	return r.kv, r.err
}

// Update replaces the value of an existing key if its ModRevision equals
// expectedRevision (0 skips the check). On ErrConflict the current state is
// returned with the error, so a caller can retry without another read.
func (s *Store) Update(ctx context.Context, key string, value []byte, expectedRevision int64, ttl time.Duration, opts ...WriteOption) (*KeyValue, error) {
	r := s.submit(ctx, &writeOp{kind: opUpdate, key: key, plain: value, expect: expectedRevision, ttl: ttl}, opts)
	return r.kv, r.err
}

// Delete removes a key if its ModRevision equals expectedRevision (0 skips the
// check). It returns the state the key had and the deleting revision.
func (s *Store) Delete(ctx context.Context, key string, expectedRevision int64) (*KeyValue, int64, error) {
	r := s.submit(ctx, &writeOp{kind: opDelete, key: key, expect: expectedRevision}, nil)
	return r.kv, r.rev, r.err
}

func (s *Store) submit(ctx context.Context, op *writeOp, opts []WriteOption) writeResult {
	for _, o := range opts {
		o(op)
	}
	if err := validateKey(op.key, s.cfg.MaxKeyBytes); err != nil {
		return writeResult{err: err}
	}
	if len(op.plain) > s.cfg.MaxValueBytes {
		return writeResult{err: fmt.Errorf("%w: %d bytes for %s exceeds the limit of %d", ErrValueTooLarge, len(op.plain), op.key, s.cfg.MaxValueBytes)}
	}
	if op.ttl < 0 {
		return writeResult{err: fmt.Errorf("storage: negative TTL %s for %s", op.ttl, op.key)}
	}
	if op.kind != opDelete {
		// The store keeps its own copy, unless handed the value: it lives on
		// in the watch ring and the list cache, and the caller may reuse
		// its buffer. Exactly its length, so that an append by a reader
		// reallocates.
		if op.handedOver {
			op.plain = op.plain[:len(op.plain):len(op.plain)]
		} else {
			own := make([]byte, len(op.plain))
			copy(own, op.plain)
			op.plain = own
		}
		sealed, err := s.sealer.seal(op.key, op.plain)
		if err != nil {
			return writeResult{err: err}
		}
		op.sealed = sealed
	}
	op.actor = ActorFrom(ctx)
	op.done = make(chan writeResult, 1)
	select {
	case s.writes <- op:
	case <-ctx.Done():
		return writeResult{err: ctx.Err()}
	case <-s.ctx.Done():
		return writeResult{err: ErrClosed}
	}
	// Once queued the write happens whatever the caller does; waiting on
	// ctx here only lets an impatient caller go.
	select {
	case r := <-op.done:
		return r
	case <-ctx.Done():
		return writeResult{err: ctx.Err()}
	}
}

// writeLoop is the single writer of this process: it takes the first queued
// operation, then everything else already queued (up to the batch limits),
// and commits them in one transaction.
//
// A commit has a fixed cost (a transaction, the pages it rewrites, waking
// the watchers), so bigger batches make each write cheaper; waiting for one
// makes each write slower. The loop waits only where that is worth it:
//
//   - Right after a commit the callers it answered are still on their way
//     back with their next writes, so the queue briefly looks empty and the
//     next batch would be tiny (then the one after large, and so on). When a
//     batch is smaller than the last one, the loop lingers for the rest: at
//     most a quarter of the last commit's duration.
//   - When writes were already waiting as the loop came back, the store is
//     busy: writes arrive faster than one per commit. Then the batch grows
//     towards busyBatchOps for as long as writes keep coming (each within
//     busyGap of the one before) and at most busyLinger. At 1,000 hollow
//     nodes this takes the writes per commit from 4-5 to 6-8, and the
//     commits and their watch dispatch from 24% of the server's CPU to 20%;
//     an idle store, or one seeing a write now and then, never waits.
func (s *Store) writeLoop() {
	lastSize, lastCommit := 0, time.Duration(0)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var first *writeOp
		busy := true
		select {
		case first = <-s.writes:
		default:
			busy = false
			select {
			case first = <-s.writes:
			case <-s.ctx.Done():
				s.failQueued()
				return
			}
		}
		batch := []*writeOp{first}
		size := len(first.sealed)
		started := time.Now()
	collect:
		for len(batch) < maxBatchOps && size < maxBatchBytes {
			select {
			case op := <-s.writes:
				batch = append(batch, op)
				size += len(op.sealed)
				continue
			default:
			}
			var wait time.Duration
			switch {
			case busy && len(batch) < busyBatchOps:
				wait = min(busyGap, busyLinger-time.Since(started))
			case len(batch) < lastSize:
				wait = min(lastCommit/4, maxLinger) - time.Since(started)
			}
			if wait <= 0 {
				break
			}
			timer.Reset(wait)
			select {
			case op := <-s.writes:
				timer.Stop()
				batch = append(batch, op)
				size += len(op.sealed)
			case <-timer.C:
				break collect
			case <-s.ctx.Done():
				timer.Stop()
				break collect
			}
		}
		start := time.Now()
		s.commit(batch)
		lastSize, lastCommit = len(batch), time.Since(start)
	}
}

func (s *Store) failQueued() {
	for {
		select {
		case op := <-s.writes:
			op.done <- writeResult{err: ErrClosed}
		default:
			return
		}
	}
}

func (s *Store) commit(batch []*writeOp) {
	var err error
	for attempt := 1; attempt <= writeAttempts; attempt++ {
		var res []writeResult
		var evs []Event
		var base int64
		var atCommit bool
		start := time.Now()
		res, evs, base, atCommit, err = s.tryCommit(batch)
		took := time.Since(start)
		if err == nil {
			result := commitCommitted
			if len(evs) == 0 {
				result = commitRejected // nothing was written
			}
			s.metrics.observeCommit(result, len(batch), took)
			// Deliver to local watchers before answering the callers, so a
			// client that watches after its own write sees it.
			s.hub.localCommit(base, evs)
			for i, op := range batch {
				op.done <- res[i]
			}
			return
		}
		if atCommit {
			s.metrics.observeCommit(commitUnknown, len(batch), took)
			err = fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
			s.hub.wakeUp()
			break
		}
		if s.ctx.Err() != nil || attempt == writeAttempts {
			s.metrics.observeCommit(commitFailed, len(batch), took)
			if s.ctx.Err() != nil {
				err = ErrClosed
			}
			break
		}
		s.metrics.observeCommit(commitRetried, len(batch), took)
		s.log.Warn("write batch failed before commit; retrying", "attempt", attempt, "ops", len(batch), "err", err)
		time.Sleep(time.Duration(attempt*attempt) * 50 * time.Millisecond)
	}
	err = s.wrap("write", err)
	for _, op := range batch {
		op.done <- writeResult{err: err}
	}
}

// tryCommit runs one batch in one transaction. It returns a result per
// operation, the events of the successful ones, the revision the batch
// started after, and whether a failure happened at COMMIT (outcome unknown).
func (s *Store) tryCommit(batch []*writeOp) (res []writeResult, evs []Event, base int64, atCommit bool, err error) {
	keys := make([]any, 0, len(batch))
	seen := make(map[string]bool, len(batch))
	for _, op := range batch {
		if !seen[op.key] {
			seen[op.key] = true
			keys = append(keys, op.key)
		}
	}
	load := loadTemplate.stmt(len(keys), keys)
	var hooked []int64 // revisions whose OnCommitted hooks the hub holds
	atCommit, err = s.d.runBatch(s.ctx, load, func(b int64, current map[string]*KeyValue) ([]stmt, error) {
		var stmts []stmt
		base = b
		res, evs, stmts, err = s.plan(batch, b, current)
		if err == nil {
			// Before COMMIT: once committed, the poller may dispatch
			// these revisions before this goroutine is back.
			hooked = append(hooked, s.hub.expectHooks(batch, res)...)
		}
		return stmts, err
	})
	if err != nil {
		if !atCommit {
			s.hub.dropHooks(hooked) // nothing was written
		}
		return nil, nil, 0, atCommit, err
	}
	return res, evs, base, false, nil
}

// plan decides every operation of a batch against the current state (in
// order, so two operations on one key see each other), assigns revisions
// after base to the successful ones, and returns the statements that record
// them. No statements means nothing to write.
func (s *Store) plan(batch []*writeOp, base int64, current map[string]*KeyValue) (res []writeResult, evs []Event, stmts []stmt, err error) {
	now := time.Now()
	rev := base
	res = make([]writeResult, len(batch))
	var hist []historyRow
	final := map[string]*KeyValue{} // keys written, with their state after the batch (nil = deleted)
	for i, op := range batch {
		cur := current[op.key]
		switch {
		case op.kind == opCreate && cur != nil:
			res[i] = s.failed(cur, fmt.Errorf("%w: %s", ErrKeyExists, op.key))
			continue
		case op.kind != opCreate && cur == nil:
			res[i] = writeResult{err: fmt.Errorf("%w: %s", ErrNotFound, op.key)}
			continue
		case op.kind != opCreate && op.expect != 0 && cur.ModRevision != op.expect:
			res[i] = s.failed(cur, fmt.Errorf("%w: %s is at revision %d, not %d", ErrConflict, op.key, cur.ModRevision, op.expect))
			continue
		}
		rev++
		h := historyRow{revision: rev, key: op.key, actor: op.actor, at: now}
		ev := Event{Revision: rev}
		var prevPlain *KeyValue
		if cur != nil {
			if prevPlain, err = s.opened(cur); err != nil {
				return nil, nil, nil, err
			}
			h.prevRevision = cur.ModRevision
		}
		switch op.kind {
		case opCreate, opUpdate:
			next := &KeyValue{Key: op.key, Value: op.sealed, CreateRevision: rev, ModRevision: rev, Version: 1}
			if op.ttl > 0 {
				// Milliseconds, as stored: events and results equal what a read returns.
				next.ExpiresAt = msTime(timeMs(now.Add(op.ttl)))
			}
			h.op, ev.Type = "create", Created
			if cur != nil {
				next.CreateRevision, next.Version = cur.CreateRevision, cur.Version+1
				h.op, ev.Type = "update", Updated
			}
			h.value, h.createRevision, h.version, h.expiresAt = next.Value, next.CreateRevision, next.Version, next.ExpiresAt
			current[op.key], final[op.key] = next, next
			plain := *next
			plain.Value = op.plain
			ev.KV, ev.PrevKV = &plain, prevPlain
			res[i] = writeResult{kv: &plain, rev: rev}
		case opDelete:
			h.op, ev.Type = "delete", Deleted
			h.createRevision, h.version = cur.CreateRevision, cur.Version
			current[op.key], final[op.key] = nil, nil
			gone := *prevPlain
			gone.ModRevision = rev
			ev.KV, ev.PrevKV = &gone, prevPlain
			res[i] = writeResult{kv: prevPlain, rev: rev}
		}
		hist = append(hist, h)
		evs = append(evs, ev)
	}
	if rev == base {
		return res, nil, nil, nil // every operation failed its check
	}
	return res, evs, s.writeStatements(hist, final, rev), nil
}

// failed reports a failed check together with the key's current state.
func (s *Store) failed(cur *KeyValue, err error) writeResult {
	plain, oerr := s.opened(cur)
	if oerr != nil {
		return writeResult{err: oerr}
	}
	return writeResult{kv: plain, err: err}
}

type historyRow struct {
	revision, createRevision, prevRevision, version int64
	key, op, actor                                  string
	value                                           []byte
	expiresAt, at                                   time.Time
}

// stmt is one SQL statement ("?" placeholders) with its arguments.
type stmt struct {
	sql  string
	args []any
	// A multi-row statement is head, rows copies of row (comma-separated)
	// and tail, with len(args)/rows arguments per row; see pieces.
	head, row, tail string
	rows            int
}

// rowsTemplate is the text of a multi-row statement: head, rows copies of
// row (comma-separated), tail.
type rowsTemplate struct{ head, row, tail string }

// The write path's multi-row statements.
var (
	loadTemplate    = rowsTemplate{selectCurrent + ` AND kv.key IN (`, "?", `)`}
	historyTemplate = rowsTemplate{`INSERT INTO history (revision, key, op, value, create_revision, prev_revision, version, expires_at, actor, at) VALUES `,
		"(" + placeholders(10) + ")", ""}
	kvUpsertTemplate = rowsTemplate{`INSERT INTO kv (` + kvColumns + `) VALUES `, "(" + placeholders(5) + ")", ` ON CONFLICT (key) DO UPDATE SET
			create_revision = excluded.create_revision, mod_revision = excluded.mod_revision,
			version = excluded.version, expires_at = excluded.expires_at`}
	kvDeleteTemplate = rowsTemplate{`DELETE FROM kv WHERE key IN (`, "?", `)`}
)

// stmt builds the statement of rows rows.
func (t rowsTemplate) stmt(rows int, args []any) stmt {
	return stmt{sql: t.text(rows), args: args, head: t.head, row: t.row, tail: t.tail, rows: rows}
}

func (t rowsTemplate) text(rows int) string { return t.head + repeatRow(t.row, rows) + t.tail }

func repeatRow(row string, n int) string {
	return strings.TrimSuffix(strings.Repeat(row+",", n), ",")
}

// writePathTexts is every statement text a write batch runs in pieces
// (see stmt.pieces): what a dialect may prepare once.
func writePathTexts() []string {
	texts := []string{selectMeta, updateMetaRevision}
	for _, t := range []rowsTemplate{loadTemplate, historyTemplate, kvUpsertTemplate, kvDeleteTemplate} {
		for k := 1; k <= maxBatchOps; k *= 2 {
			texts = append(texts, t.text(k))
		}
	}
	return texts
}

// pieces splits a multi-row statement into statements of power-of-two row
// counts (a batch of 13 rows runs as 8, 4 and 1). A dialect that prepares
// each statement text once then sees at most nine texts per statement
// instead of one per batch size: SQLite spent more on parsing and planning
// each batch's statements than on running them.
func (st stmt) pieces() []stmt {
	if st.rows <= 1 {
		return []stmt{st}
	}
	per := len(st.args) / st.rows
	var out []stmt
	args := st.args
	for n := st.rows; n > 0; {
		k := 1 << (bits.Len(uint(n)) - 1)
		out = append(out, rowsTemplate{st.head, st.row, st.tail}.stmt(k, args[:k*per]))
		args, n = args[k*per:], n-k
	}
	return out
}

// writeStatements returns the statements that append the history rows, bring
// kv to the batch's final state and record the new revision: one multi-row
// statement each. The dialect decides how to send them (PostgreSQL folds them
// into a single round trip).
func (s *Store) writeStatements(hist []historyRow, final map[string]*KeyValue, rev int64) []stmt {
	args := make([]any, 0, len(hist)*10)
	for _, h := range hist {
		var value any
		if h.op != "delete" {
			value = h.value
		}
		args = append(args, h.revision, h.key, h.op, value, h.createRevision, h.prevRevision, h.version, timeMs(h.expiresAt), h.actor, s.d.timeArg(h.at))
	}
	out := []stmt{historyTemplate.stmt(len(hist), args)}
	var upserts, deletes []any
	nUp := 0
	for key, kv := range final {
		if kv == nil {
			deletes = append(deletes, key)
			continue
		}
		nUp++
		// The value goes only into the history row (see selectCurrent).
		upserts = append(upserts, kv.Key, kv.CreateRevision, kv.ModRevision, kv.Version, timeMs(kv.ExpiresAt))
	}
	if nUp > 0 {
		out = append(out, kvUpsertTemplate.stmt(nUp, upserts))
	}
	if len(deletes) > 0 {
		out = append(out, kvDeleteTemplate.stmt(len(deletes), deletes))
	}
	return append(out, stmt{sql: updateMetaRevision, args: []any{rev}})
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}
