package storage

import "errors"

// Sentinel errors. Callers test them with errors.Is; the store wraps them with
// the key or revision involved.
var (
	// ErrKeyExists: Create of a key that already exists.
	ErrKeyExists = errors.New("storage: key already exists")
	// ErrNotFound: Get, Update or Delete of a key that does not exist.
	ErrNotFound = errors.New("storage: key not found")
	// ErrConflict: Update or Delete whose expected revision is not the key's
	// current ModRevision. The current state is returned beside the error.
	ErrConflict = errors.New("storage: revision conflict")
	// ErrCompacted: the requested revision is older than the compaction floor,
	// or a watcher fell too far behind. Clients recover by listing again.
	ErrCompacted = errors.New("storage: required revision has been compacted")
	// ErrFutureRevision: the requested revision is newer than the store's.
	ErrFutureRevision = errors.New("storage: required revision is a future revision")
	// ErrInvalidKey: empty key, invalid UTF-8, a NUL byte, or over MaxKeyBytes.
	ErrInvalidKey = errors.New("storage: invalid key")
	// ErrValueTooLarge: a value over the configured MaxValueBytes.
	ErrValueTooLarge = errors.New("storage: value too large")
	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("storage: store is closed")
)
