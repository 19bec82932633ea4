package storage

import (
	"context"
	"time"
)

// KeyValue is one key's state at a revision.
type KeyValue struct {
	Key string
	// Value is the stored bytes (the object's JSON for the apiserver). Secrets
	// are decrypted before they are returned.
	Value []byte
	// CreateRevision is the revision that created this incarnation of the key.
	CreateRevision int64
	// ModRevision is the revision of the last change; it is the CAS token.
	ModRevision int64
	// Version counts the writes since the key was created (1 after create).
	Version int64
	// ExpiresAt is when a TTL key is deleted; zero for keys without a TTL.
	ExpiresAt time.Time
}

// EventType says what a revision did to its key.
type EventType int

const (
	// Created: the key did not exist before this revision.
	Created EventType = iota + 1
	// Updated: the key existed and got a new value.
	Updated
	// Deleted: the key was removed (by a client or by TTL expiry).
	Deleted
	// Progress carries no key: every event up to Revision has been delivered.
	// It is sent only to watches that asked for it (WatchOptions.ProgressNotify).
	Progress
)

func (t EventType) String() string {
	switch t {
	case Created:
		return "create"
	case Updated:
		return "update"
	case Deleted:
		return "delete"
	case Progress:
		return "progress"
	}
	return "unknown"
}

// Event is one revision seen by a watcher.
type Event struct {
	Type     EventType
	Revision int64
	// KV is the key's state after the event. For Deleted it carries the key,
	// the deleting revision as ModRevision and the value the key had.
	KV *KeyValue
	// PrevKV is the state the event replaced; nil for Created.
	PrevKV *KeyValue
}

// ListOptions selects a page of keys under a prefix.
type ListOptions struct {
	// Prefix is matched as a plain string prefix ("/registry/pods/" lists all
	// pods, "/registry/pods/default/" one namespace's).
	Prefix string
	// StartAfter continues a paginated list: only keys strictly greater are
	// returned. Pass the last key of the previous page.
	StartAfter string
	// AnyRevision (with Revision 0) accepts whatever state the list cache
	// holds, which may be a little behind the database — Kubernetes'
	// resourceVersion="0" — and saves the read of the newest revision.
	AnyRevision bool
	// Revision pins the list to an older revision; 0 means the newest.
	// A paginated list passes the Revision of its first page to every page.
	Revision int64
	// Limit caps the number of keys; 0 means no limit.
	Limit int
}

// ListResult is one page of a list.
type ListResult struct {
	// KVs may be shared with the store's caches and other readers: treat
	// them, and their Values, as read-only.
	KVs []*KeyValue
	// Revision is the revision the whole page reflects.
	Revision int64
	// More is true when keys beyond the last one returned match the prefix.
	More bool
}

// WatchOptions selects what a watch delivers.
type WatchOptions struct {
	// Prefix is matched as a plain string prefix, as in ListOptions.
	Prefix string
	// AfterRevision: every change with a revision strictly greater is
	// delivered. 0 means "from now".
	AfterRevision int64
	// ProgressNotify asks for Progress events while the watch is idle, so the
	// caller can send Kubernetes watch bookmarks.
	ProgressNotify bool
	// Trigger, when set, narrows the live events this watch is handed to
	// those of the keys whose value (before or after the change) the
	// trigger maps to its Value.
	Trigger *WatchTrigger
}

// WatchTrigger indexes watchers by a value computed from the stored object,
// as Kubernetes' watch cache does with its indexed triggers (pods by
// spec.nodeName): the hub computes the value once per event for every
// watcher of the index and hands the event only to the watchers that want
// that value, instead of every watcher receiving and filtering every event.
// It narrows, it does not filter exactly: an event whose value cannot be
// told is handed to every watcher of the index, and the caller still
// applies its own selection.
type WatchTrigger struct {
	// Index names the function; watchers naming the same Index must pass
	// the same Prefix and an equivalent Func.
	Index string
	// Prefix is the keys Func understands; other keys are not indexed.
	Prefix string
	// Func returns a stored state's value (ok false: cannot tell).
	Func func(kv *KeyValue) (value string, ok bool)
	// Value is the one this watch wants.
	Value string
}

// Watch is a live stream of events, read through Next or through Events
// (not both).
type Watch interface {
	// Next blocks until events are ready and returns every one that is, in
	// revision order, on the caller's goroutine (one caller at a time). ok
	// is false once the stream has ended: after Stop, after the context
	// ends, or after a terminal error, which Err then returns.
	Next() (events []Event, ok bool)
	// Events delivers the events one by one on a channel, from a goroutine
	// that calls Next. It is closed when the stream ends.
	Events() <-chan Event
	// Err is the reason the stream ended (ErrCompacted when the watcher fell
	// behind or started below the compaction floor; nil after Stop).
	Err() error
	// Stop ends the watch and releases its resources. Safe to call twice.
	Stop()
}

type actorKey struct{}

// WithActor returns a context whose writes are recorded in history as made by
// user (the authenticated Kubernetes user name).
func WithActor(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, actorKey{}, user)
}

// ActorFrom returns the user recorded by WithActor, or "" if none.
func ActorFrom(ctx context.Context) string {
	s, _ := ctx.Value(actorKey{}).(string)
	return s
}
