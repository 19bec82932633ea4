package target

import (
	"context"
	"errors"
)

var (
	// ErrKeyExists is returned by Create when the key is already there.
	ErrKeyExists = errors.New("target: key already exists")
	// ErrConflict is returned by Update when the key's revision moved on.
	ErrConflict = errors.New("target: revision conflict")
)

// Target is a revisioned key-value store under test.
type Target interface {
	// Create writes a new key and returns the revision of the write.
	Create(ctx context.Context, key string, value []byte) (int64, error)
	// Update replaces the value of key if its current modification revision
	// is rev (compare-and-swap) and returns the new revision.
	Update(ctx context.Context, key string, value []byte, rev int64) (int64, error)
	// List reads every key under prefix, values included, in one request
	// and returns how many there were.
	List(ctx context.Context, prefix string) (int, error)
	// ListKeys returns every key under prefix (no values), to check
	// afterwards which acknowledged writes are really there. Not timed.
	ListKeys(ctx context.Context, prefix string) ([]string, error)
	// Watch starts a watch on prefix from now and calls onEvent from one
	// goroutine for every event, in order, until ctx ends. It returns once
	// the watch is registered; wait blocks until it has ended and returns
	// the reason (nil when ctx ended it).
	Watch(ctx context.Context, prefix string, onEvent func(key string)) (wait func() error, err error)
	// Close releases the target's connections.
	Close() error
}
