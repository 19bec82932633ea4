package storage

import (
	"context"
	"path/filepath"
	"testing"
)

// TestCommitHookRunsOnlyForItsWrite checks what identifies a write's
// OnCommitted hook at its planned revision: on PostgreSQL a revision a
// server planned but did not commit may be committed by another server,
// with another value. A hook held for a revision whose event carries
// another value is not run, and is forgotten once the stream has passed.
func TestCommitHookRunsOnlyForItsWrite(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, Config{Endpoint: filepath.Join(t.TempDir(), "state.db"), EncryptionKey: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rev, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	hook := func(kv *KeyValue) { ran = append(ran, string(kv.Value)) }
	// A write planned at the next revision that never committed...
	s.hub.expectHooks([]*writeOp{{kind: opCreate, key: "/registry/leases/a", plain: []byte("planned"), committed: hook}},
		[]writeResult{{rev: rev + 1}})
	// ...and another write that took that revision.
	if _, err := s.Create(ctx, "/registry/leases/a", []byte("committed"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "/registry/leases/b", []byte("mine"), 0, OnCommitted(hook)); err != nil {
		t.Fatal(err)
	}
	if len(ran) != 1 || ran[0] != "mine" {
		t.Errorf("hooks ran for %q, want only the write that committed with them (\"mine\")", ran)
	}
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	if len(s.hub.hooks) != 0 {
		t.Errorf("the hub still holds %d hooks of revisions it has passed", len(s.hub.hooks))
	}
}
