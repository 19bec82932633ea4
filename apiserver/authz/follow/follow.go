package follow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/skiffkube/skiff/storage"
)

// Store is the part of the store a follower reads.
type Store interface {
	List(ctx context.Context, opts storage.ListOptions) (*storage.ListResult, error)
	Watch(ctx context.Context, opts storage.WatchOptions) (storage.Watch, error)
}

// Handler receives the view: Reset with every key under the prefix (at
// start and after a relist), then Apply for each change in revision order.
// Calls never overlap.
type Handler interface {
	Reset(kvs []*storage.KeyValue)
	Apply(ev storage.Event)
}

// Start lists prefix into h and follows it until ctx ends. It returns
// after the first Reset and once the watch is open, so that a write made
// after Start returns is always seen.
func Start(ctx context.Context, store Store, prefix string, h Handler, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	rev, err := load(ctx, store, prefix, h)
	if err != nil {
		return fmt.Errorf("listing %s: %w", prefix, err)
	}
	w, err := store.Watch(ctx, storage.WatchOptions{Prefix: prefix, AfterRevision: rev})
	if err != nil {
		return fmt.Errorf("watching %s: %w", prefix, err)
	}
	go run(ctx, store, prefix, h, log, rev, w)
	return nil
}

func load(ctx context.Context, store Store, prefix string, h Handler) (int64, error) {
	var kvs []*storage.KeyValue
	var rev int64
	start := ""
	for {
		page, err := store.List(ctx, storage.ListOptions{Prefix: prefix, StartAfter: start, Revision: rev, Limit: 1000})
		if err != nil {
			return 0, err
		}
		rev = page.Revision
		kvs = append(kvs, page.KVs...)
		if !page.More || len(page.KVs) == 0 {
			break
		}
		start = page.KVs[len(page.KVs)-1].Key
	}
	h.Reset(kvs)
	return rev, nil
}

func run(ctx context.Context, store Store, prefix string, h Handler, log *slog.Logger, rev int64, w storage.Watch) {
	for ctx.Err() == nil {
		var err error
		if w == nil {
			w, err = store.Watch(ctx, storage.WatchOptions{Prefix: prefix, AfterRevision: rev})
		}
		if err != nil {
			if errors.Is(err, storage.ErrCompacted) {
				if r, err := load(ctx, store, prefix, h); err == nil {
					rev = r
					continue
				}
			}
			log.Warn("follow: watch failed; retrying", "prefix", prefix, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		for ev := range w.Events() {
			if ev.Type == storage.Progress {
				continue
			}
			rev = ev.Revision
			h.Apply(ev)
		}
		if err := w.Err(); errors.Is(err, storage.ErrCompacted) {
			if r, err := load(ctx, store, prefix, h); err == nil {
				rev = r
			}
		}
		w.Stop()
		w = nil
	}
}
