package endpoints

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiffkube/skiff/apiserver/registry"
	"github.com/skiffkube/skiff/storage"
)

// eventCache lets the watchers that receive the same store event share the
// work of decoding it and of encoding its watch frame: with a thousand
// watchers on a resource, one write is decoded once and encoded once per
// encoding and event type, not a thousand times (Kubernetes' watch cache
// does the same with its caching objects). Entries live only while an
// event is being fanned out: the cache keeps the most recent events and
// forgets the oldest, and a watcher that misses simply does the work itself.
type eventCache struct {
	mu      sync.Mutex
	entries map[eventKey]*sharedEvent
	order   []eventKey // insertion order, for eviction
}

// eventCacheSize bounds the cache; a write's fan-out completes long before
// this many newer events have arrived.
const eventCacheSize = 256

// maxSharedFrame is the largest frame kept; bigger objects are rare and
// each watcher encodes them itself rather than pin their bytes.
const maxSharedFrame = 256 << 10

// eventKey names a stored state of a key: the store hands every watcher the
// same *KeyValue for one event. The resource is part of the key because the
// same value decodes differently for a custom resource re-registered with
// another kind.
type eventKey struct {
	kv  *storage.KeyValue
	res *registry.Resource
	rev int64
}

// sharedEvent is one decoded stored state and its encoded frames. Its
// object is shared between watchers and must not be modified.
type sharedEvent struct {
	once sync.Once
	obj  runtime.Object
	err  error

	mu     sync.Mutex
	frames map[frameKey][]byte
}

type frameKey struct {
	typ string
	enc encoding
}

func newEventCache() *eventCache {
	return &eventCache{entries: map[eventKey]*sharedEvent{}}
}

// get returns the shared entry for value (the stored bytes of kv) decoded
// as res at revision rev.
func (c *eventCache) get(res *registry.Resource, kv *storage.KeyValue, value []byte, rev int64) *sharedEvent {
	k := eventKey{kv: kv, res: res, rev: rev}
	c.mu.Lock()
	e, ok := c.entries[k]
	if !ok {
		e = &sharedEvent{}
		c.entries[k] = e
		c.order = append(c.order, k)
		if len(c.order) > eventCacheSize {
			delete(c.entries, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.mu.Unlock()
	e.once.Do(func() { e.obj, e.err = decodeStored(res, value, rev) })
	return e
}

// frame returns the event's frame of type typ in encoding enc, building it
// with build the first time.
func (e *sharedEvent) frame(typ string, enc encoding, build func() ([]byte, error)) ([]byte, error) {
	k := frameKey{typ: typ, enc: enc}
	e.mu.Lock()
	defer e.mu.Unlock()
	if f, ok := e.frames[k]; ok {
		return f, nil
	}
	f, err := build()
	if err != nil {
		return nil, err
	}
	if len(f) <= maxSharedFrame {
		if e.frames == nil {
			e.frames = map[frameKey][]byte{}
		}
		e.frames[k] = f
	}
	return f, nil
}
