package endpoints

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiffkube/skiff/apiserver/registry"
	"github.com/skiffkube/skiff/storage"
)

// eventCache lets the watchers that receive the same store event share the
// work of decoding it and of encoding its watch frame: with a thousand
// watchers on a resource, one write is decoded once and encoded once per
// encoding and event type, not a thousand times (Kubernetes' watch cache
// does the same with its caching objects). Reads share the decoded objects
// too: the read-modify-write of an update (a binding, a kubelet's status
// write) and a GET of a state the watchers have just decoded copy it
// rather than decode its JSON again, as Kubernetes' reads from its watch
// cache hold decoded objects. A write this process makes of a watched
// resource seeds the cache with a copy of the object it wrote
// (seedOnCommit), so that nobody decodes it at all. A stored state is named by its key and revision,
// which never change meaning. Entries live only a short while:
// the cache keeps the most recent states and forgets the oldest, and a
// reader that misses simply does the work itself.
type eventCache struct {
	mu      sync.Mutex
	entries map[eventKey]*sharedEvent
	order   []eventKey // insertion order, for eviction

	// watches counts each resource's open watches (*atomic.Int64 by
	// *registry.Resource). Only writes of watched resources are seeded:
	// a kind nobody watches (core Events, a third of the writes at scale)
	// would only push the states readers want out of the cache.
	watches sync.Map
}

// eventCacheSize bounds the cache; a write's fan-out completes long before
// this many newer events have arrived, and the writes that typically follow
// a pod's (its binding, its kubelet's status) come within about as many.
const eventCacheSize = 1024

// maxSharedFrame is the largest frame kept; bigger objects are rare and
// each watcher encodes them itself rather than pin their bytes.
const maxSharedFrame = 256 << 10

// eventKey names a stored state: a key at the revision that wrote it (for a
// deletion, the deleting revision). The resource is part of it because the
// same value decodes differently for a custom resource re-registered with
// another kind.
type eventKey struct {
	key string
	res *registry.Resource
	rev int64
	// left: the state the write at rev replaced, stamped with rev (what
	// a watch the object leaves receives as DELETED), not the state rev
	// wrote.
	left bool
}

// sharedEvent is one decoded stored state and its encoded frames. Its
// object is shared between watchers and must not be modified.
type sharedEvent struct {
	once sync.Once
	obj  runtime.Object
	err  error

	mu     sync.Mutex
	frames map[frameKey][]byte

	// The object's selectable fields, for watches with a field selector:
	// rendering them converts the whole object, so it is done once per
	// event as Kubernetes' watch cache does, not once per watcher.
	fieldsOnce sync.Once
	fields     fields.Set
	fieldsErr  error
}

// fieldSet returns the event object's field set as res renders it. The set
// is shared and must not be modified.
func (e *sharedEvent) fieldSet(res *registry.Resource) (fields.Set, error) {
	e.fieldsOnce.Do(func() { e.fields, e.fieldsErr = res.FieldSet(e.obj) })
	return e.fields, e.fieldsErr
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
	return c.getKey(eventKey{key: kv.Key, res: res, rev: rev}, res, value, rev)
}

// left returns the shared entry for the state an update replaced (prev)
// at the update's revision: Kubernetes' watch cache sends a watch whose
// selection an object leaves a DELETED event with the object's previous
// content and the event's resourceVersion, so the object still matches
// what the watcher selected.
func (c *eventCache) left(res *registry.Resource, kv, prev *storage.KeyValue) *sharedEvent {
	return c.getKey(eventKey{key: kv.Key, res: res, rev: kv.ModRevision, left: true}, res, prev.Value, kv.ModRevision)
}

func (c *eventCache) getKey(k eventKey, res *registry.Resource, value []byte, rev int64) *sharedEvent {
	c.mu.Lock()
	e, ok := c.entries[k]
	if !ok {
		e = &sharedEvent{}
		c.insertLocked(k, e)
	}
	c.mu.Unlock()
	e.once.Do(func() { e.obj, e.err = decodeStored(res, value, rev) })
	return e
}

// watchStarted counts a watch of res until the returned func is called.
func (c *eventCache) watchStarted(res *registry.Resource) (ended func()) {
	v, _ := c.watches.LoadOrStore(res, new(atomic.Int64))
	n := v.(*atomic.Int64)
	n.Add(1)
	return func() { n.Add(-1) }
}

// watched reports whether res has an open watch.
func (c *eventCache) watched(res *registry.Resource) bool {
	v, ok := c.watches.Load(res)
	return ok && v.(*atomic.Int64).Load() > 0
}

// seed records obj as the decoded form of kv's stored state, which this
// process has just written from obj: the watchers of the write and the
// reads that follow it use the writer's object instead of decoding the
// value again. obj must be the caller's own copy; it becomes shared and
// must not be modified afterwards. A state already decoded is kept.
func (c *eventCache) seed(res *registry.Resource, kv *storage.KeyValue, obj runtime.Object) {
	obj.GetObjectKind().SetGroupVersionKind(res.GVK())
	accessor(obj).SetResourceVersion(strconv.FormatInt(kv.ModRevision, 10))
	e := &sharedEvent{obj: obj}
	e.once.Do(func() {}) // decoded already
	k := eventKey{key: kv.Key, res: res, rev: kv.ModRevision}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[k]; ok {
		return
	}
	c.insertLocked(k, e)
}

func (c *eventCache) insertLocked(k eventKey, e *sharedEvent) {
	c.entries[k] = e
	c.order = append(c.order, k)
	if len(c.order) > eventCacheSize {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
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

// object returns kv's stored state decoded as res, for a reader that may
// change it: a copy of the shared object.
func (c *eventCache) object(res *registry.Resource, kv *storage.KeyValue) (runtime.Object, error) {
	e := c.get(res, kv, kv.Value, kv.ModRevision)
	if e.err != nil {
		return nil, e.err
	}
	return e.obj.DeepCopyObject(), nil
}

// storeOptions are the options of a create or update that stores data, the
// encoding of obj made for it (encodeStored): data is handed over to the
// store, which would otherwise copy it (nothing here changes it after), and
// the event cache is seeded with obj.
func (h *Handler) storeOptions(res *registry.Resource, obj runtime.Object, data []byte) []storage.WriteOption {
	return append(h.seedOnCommit(res, obj, data), storage.HandOver())
}

// seedOnCommit returns the store option that seeds the cache with a copy
// of obj as the decoded form of the state data is about to store, or
// nothing: when nobody watches res, or when decoding data might give back
// something else than obj:
//
//   - a kind stored in another form (res.Stored) or unstructured (numbers,
//     pruning) decodes to a different object;
//   - a string that is not valid UTF-8 is stored with U+FFFD in its place
//     (encoding/json writes it as the escape `\ufffd`).
//
// Times are otherwise the one thing a round trip through JSON changes: a
// metav1.Time keeps whole seconds. Clients' times arrive in whole seconds
// (JSON and protobuf alike), and the times this server sets are truncated
// where they are set; the field manager's are truncated here, in the copy.
// Everything else in a typed object survives encoding/json unchanged.
func (h *Handler) seedOnCommit(res *registry.Resource, obj runtime.Object, data []byte) []storage.WriteOption {
	if !h.events.watched(res) {
		return nil
	}
	cp := seedCopy(res, obj, data)
	if cp == nil {
		return nil
	}
	return []storage.WriteOption{storage.OnCommitted(func(kv *storage.KeyValue) {
		h.events.seed(res, kv, cp)
		if h.checkSeeds != nil {
			if err := checkSeeded(res, kv, cp); err != nil {
				h.checkSeeds(err)
			}
		}
	})}
}

// seedCopy returns the copy of obj to seed for data, or nil (see
// seedOnCommit).
func seedCopy(res *registry.Resource, obj runtime.Object, data []byte) runtime.Object {
	if res.Stored != nil || res.Unstructured() || bytes.Contains(data, invalidUTF8Escape) {
		return nil
	}
	cp := obj.DeepCopyObject()
	mf := accessor(cp).GetManagedFields() // the copy's own entries
	for i := range mf {
		if t := mf[i].Time; t != nil && t.Nanosecond() != 0 {
			mf[i].Time = &metav1.Time{Time: t.Truncate(time.Second).Local()}
		}
	}
	return cp
}

var invalidUTF8Escape = []byte(`\ufffd`)

// checkSeeded reports how obj, seeded as kv's decoded state, differs from
// a decoding of kv's value: to the code that compares old and new objects
// (semantic equality: a time to the nanosecond) or when served in JSON or
// protobuf.
func checkSeeded(res *registry.Resource, kv *storage.KeyValue, obj runtime.Object) error {
	decoded, err := decodeStored(res, kv.Value, kv.ModRevision)
	if err != nil {
		return fmt.Errorf("%s at %d: decoding the stored value: %w", kv.Key, kv.ModRevision, err)
	}
	if !apiequality.Semantic.DeepEqual(obj, decoded) {
		return fmt.Errorf("%s at %d: the seeded object is not semantically equal to the stored one:\n%+v\nstored:\n%+v", kv.Key, kv.ModRevision, obj, decoded)
	}
	encoders := []struct {
		name   string
		encode func(runtime.Object) ([]byte, error)
	}{{"JSON", encodeObject}, {"protobuf", encodeProtobuf}}
	for _, e := range encoders {
		want, werr := e.encode(decoded)
		got, gerr := e.encode(obj)
		if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
			return fmt.Errorf("%s at %d: the seeded object encodes in %s as\n%q (%v)\nthe stored value as\n%q (%v)", kv.Key, kv.ModRevision, e.name, got, gerr, want, werr)
		}
	}
	return nil
}
