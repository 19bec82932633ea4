package target

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/skiffkube/skiff/storage"
)

// Skiff is skiff's store, used in-process as the apiserver uses it.
type Skiff struct {
	store *storage.Store
}

// OpenSkiff opens (and migrates) a skiff store on endpoint: a SQLite file
// path or a postgres:// URL. Only warnings and errors are logged, to stderr.
// listCache false turns off the in-memory list cache, so that lists read the
// database every time.
func OpenSkiff(ctx context.Context, endpoint string, listCache bool) (*Skiff, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("target: encryption key: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg := storage.Config{Endpoint: endpoint, EncryptionKey: key, Logger: logger}
	if !listCache {
		cfg.ListCacheBytes = -1
	}
	s, err := storage.New(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("target: open skiff store %s: %w", endpoint, err)
	}
	return &Skiff{store: s}, nil
}

// Create implements Target.
func (s *Skiff) Create(ctx context.Context, key string, value []byte) (int64, error) {
	kv, err := s.store.Create(ctx, key, value, 0)
	if errors.Is(err, storage.ErrKeyExists) {
		return 0, ErrKeyExists
	}
	if err != nil {
		return 0, err
	}
	return kv.ModRevision, nil
}

// Update implements Target.
func (s *Skiff) Update(ctx context.Context, key string, value []byte, rev int64) (int64, error) {
	kv, err := s.store.Update(ctx, key, value, rev, 0)
	if errors.Is(err, storage.ErrConflict) {
		return 0, ErrConflict
	}
	if err != nil {
		return 0, err
	}
	return kv.ModRevision, nil
}

// List implements Target.
func (s *Skiff) List(ctx context.Context, prefix string) (int, error) {
	res, err := s.store.List(ctx, storage.ListOptions{Prefix: prefix})
	if err != nil {
		return 0, err
	}
	return len(res.KVs), nil
}

// ListKeys implements Target.
func (s *Skiff) ListKeys(ctx context.Context, prefix string) ([]string, error) {
	res, err := s.store.List(ctx, storage.ListOptions{Prefix: prefix})
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(res.KVs))
	for i, kv := range res.KVs {
		keys[i] = kv.Key
	}
	return keys, nil
}

// Watch implements Target.
func (s *Skiff) Watch(ctx context.Context, prefix string, onEvent func(key string)) (func() error, error) {
	w, err := s.store.Watch(ctx, storage.WatchOptions{Prefix: prefix})
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() {
		defer w.Stop()
		for {
			select {
			case ev, ok := <-w.Events():
				if !ok {
					if ctx.Err() != nil {
						done <- nil
					} else {
						done <- w.Err()
					}
					return
				}
				if ev.KV != nil {
					onEvent(ev.KV.Key)
				}
			case <-ctx.Done():
				done <- nil
				return
			}
		}
	}()
	return func() error { return <-done }, nil
}

// Close implements Target.
func (s *Skiff) Close() error { return s.store.Close() }
