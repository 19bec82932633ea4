package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	psadmission "k8s.io/pod-security-admission/admission"

	"github.com/skiffkube/skiff/storage"
)

// Store is the part of the revisioned store admission uses.
type Store interface {
	Get(ctx context.Context, key string, revision int64) (*storage.KeyValue, error)
	List(ctx context.Context, opts storage.ListOptions) (*storage.ListResult, error)
	Update(ctx context.Context, key string, value []byte, expectedRevision int64, ttl time.Duration, opts ...storage.WriteOption) (*storage.KeyValue, error)
}

// Attributes describe an object about to be created or updated.
type Attributes struct {
	Resource  schema.GroupResource
	Namespace string
	Name      string
	// Object is the typed object (custom resources are *unstructured); the
	// mutating plugins change it in place.
	Object runtime.Object
	// Subresource of the request ("status", …), empty for the object itself.
	Subresource string
	// DryRun: check, but charge nothing.
	DryRun bool
}

// Result is what validation adds to a successful request.
type Result struct {
	// Warnings go to the client as Warning headers.
	Warnings []string
	// Undo releases what validation charged (quota), for when the store
	// write then fails.
	Undo func()
}

// Chain runs the plugins: every mutation, then every validation.
type Chain struct {
	store Store
	log   *slog.Logger
	// psa is Kubernetes' Pod Security Admission; psaErr, when it could not
	// be built, refuses what it would check (500) rather than admit it.
	psa    *psadmission.Admission
	psaErr error
	// decoded holds the objects decodeCached decoded.
	decoded decodedCache
}

// New returns the admission chain over store.
func New(store Store, log *slog.Logger) *Chain {
	if log == nil {
		log = slog.Default()
	}
	c := &Chain{store: store, log: log}
	c.psa, c.psaErr = newPodSecurity(store, &c.decoded)
	if c.psaErr != nil {
		log.Error("pod security admission unavailable; pods and namespaces will be refused", "err", c.psaErr)
	}
	return c
}

var (
	podsResource     = schema.GroupResource{Resource: "pods"}
	servicesResource = schema.GroupResource{Resource: "services"}
)

// Mutate applies defaults: a claim's default storage class and the claims'
// and volumes' in-use protection finalizers; an Ingress's default class;
// the pod's service account, its priority, the namespace's LimitRange
// defaults and the default not-ready/unreachable tolerations. A pod naming
// a RuntimeClass is refused last, where upstream's RuntimeClass plugin
// comes among the mutating ones.
func (c *Chain) Mutate(ctx context.Context, a *Attributes) error {
	if a.Resource == claimsResource || a.Resource == volumesResource {
		return c.storageObjects(ctx, a)
	}
	if a.Resource == ingressesResource {
		return c.defaultIngressClass(ctx, a)
	}
	if a.Resource != podsResource {
		return nil
	}
	for _, f := range []func(context.Context, *Attributes) error{c.serviceAccount, c.priority, c.limitRangeDefaults, c.defaultTolerations, c.podRuntimeClass} {
		if err := f(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the (defaulted and validated) object being created:
// LimitRange bounds, Pod Security, a pod's overhead (RuntimeClass), then
// quota, which it charges last so that nothing is charged for a request
// another plugin refuses.
func (c *Chain) Validate(ctx context.Context, a *Attributes) (Result, error) {
	var res Result
	if a.Resource == podsResource {
		if err := c.limitRangeBounds(ctx, a); err != nil {
			return res, err
		}
	}
	warnings, err := c.podSecurity(ctx, a, nil)
	if err != nil {
		return res, err
	}
	res.Warnings = warnings
	if err := c.podOverhead(a); err != nil {
		return res, err
	}
	undo, err := c.chargeQuota(ctx, a)
	if err != nil {
		return res, err
	}
	res.Undo = undo
	return res, nil
}

// ValidateUpdate checks an update of a stored object (old) to a.Object:
// Pod Security Admission (namespace labels, pod images), claim resizes
// (PersistentVolumeClaimResize), then quota for what a claim's or a
// service's update adds (a larger request, node ports, a load balancer),
// which it charges; Result.Undo takes that back when
// the write fails.
func (c *Chain) ValidateUpdate(ctx context.Context, a *Attributes, old runtime.Object) (Result, error) {
	warnings, err := c.podSecurity(ctx, a, old)
	if err != nil {
		return Result{Warnings: warnings}, err
	}
	if err := c.claimResize(ctx, a, old); err != nil {
		return Result{Warnings: warnings}, err
	}
	undo, err := c.chargeUpdate(ctx, a, old)
	return Result{Warnings: warnings, Undo: undo}, err
}

// forbidden is Kubernetes' admission refusal: 403 with
// `<resource> "<name>" is forbidden: <reason>`.
func forbidden(a *Attributes, format string, args ...any) error {
	return apierrors.NewForbidden(a.Resource, a.Name, fmt.Errorf(format, args...))
}

// listInto decodes every object under prefix into a new T each. Reads of
// policy objects (priority classes, limit ranges) may be served from the
// list cache as it is, like the informer caches Kubernetes' admission
// plugins read; counting for quota reads the newest state.
func listInto[T any](ctx context.Context, s Store, prefix string, newest bool) ([]*T, int64, error) {
	l, err := s.List(ctx, storage.ListOptions{Prefix: prefix, AnyRevision: !newest})
	if err != nil {
		return nil, 0, apierrors.NewInternalError(err)
	}
	out := make([]*T, 0, len(l.KVs))
	for _, kv := range l.KVs {
		v := new(T)
		if err := json.Unmarshal(kv.Value, v); err != nil {
			return nil, 0, apierrors.NewInternalError(fmt.Errorf("decoding %s: %w", kv.Key, err))
		}
		out = append(out, v)
	}
	return out, l.Revision, nil
}

// getCachedInto is getInto for what admission may read a moment stale, as
// Kubernetes' plugins read their informers (a pod's namespace, service
// account, priority class): the store's cache answers when it holds the
// key, and a miss is read from the database, so an object created just
// before the request is still found. Every pod create would otherwise wait
// for a database read per plugin.
//
// The objects it returns are shared (see decodedCache): callers only read
// them.
func getCachedInto[T any](ctx context.Context, s Store, cache *decodedCache, key string) (*T, bool, error) {
	if cg, ok := s.(storage.CachedGetter); ok {
		if kv, found, ok := cg.GetCached(key); ok && found {
			v, err := decodeCached[T](cache, kv)
			return v, err == nil, err
		}
	}
	v, _, found, err := getInto[T](ctx, s, key)
	return v, found, err
}

// decodeCached decodes kv, or returns what an earlier call decoded from
// the same key at the same revision. The object is shared: read it only.
func decodeCached[T any](cache *decodedCache, kv *storage.KeyValue) (*T, error) {
	if v, ok := cache.get(kv.Key, kv.ModRevision).(*T); ok {
		return v, nil
	}
	v := new(T)
	if err := json.Unmarshal(kv.Value, v); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("decoding %s: %w", kv.Key, err))
	}
	cache.put(kv.Key, kv.ModRevision, v)
	return v, nil
}

// decodedCache remembers what decodeCached decoded, by key and the
// revision that wrote it: admission reads a pod's namespace, service
// account and the PriorityClasses on every create, and decoding them was
// ~1.3% of a busy server's CPU. A key written since is decoded again; the objects are
// shared between requests and only read.
type decodedCache struct {
	mu      sync.Mutex
	entries map[string]decodedEntry
}

type decodedEntry struct {
	rev int64
	obj any
}

// decodedCacheSize bounds the cache; past it the cache starts over (a
// cluster with this many namespaces and service accounts decodes some of
// them again, as every request did before).
const decodedCacheSize = 4096

func (c *decodedCache) get(key string, rev int64) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok && e.rev == rev {
		return e.obj
	}
	return nil
}

func (c *decodedCache) put(key string, rev int64, obj any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= decodedCacheSize {
		c.entries = map[string]decodedEntry{}
	}
	c.entries[key] = decodedEntry{rev: rev, obj: obj}
}

// getInto decodes one object; found is false when the key does not exist.
func getInto[T any](ctx context.Context, s Store, key string) (*T, *storage.KeyValue, bool, error) {
	kv, err := s.Get(ctx, key, 0)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, apierrors.NewInternalError(err)
	}
	v := new(T)
	if err := json.Unmarshal(kv.Value, v); err != nil {
		return nil, nil, false, apierrors.NewInternalError(fmt.Errorf("decoding %s: %w", key, err))
	}
	return v, kv, true, nil
}
