package crd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffkube/skiff/apiserver/registry"
	"github.com/skiffkube/skiff/storage"
)

// Store is the part of the store the controller uses.
type Store interface {
	Get(ctx context.Context, key string, revision int64) (*storage.KeyValue, error)
	Update(ctx context.Context, key string, value []byte, expectedRevision int64, ttl time.Duration, opts ...storage.WriteOption) (*storage.KeyValue, error)
	Delete(ctx context.Context, key string, expectedRevision int64) (*storage.KeyValue, int64, error)
	List(ctx context.Context, opts storage.ListOptions) (*storage.ListResult, error)
	Watch(ctx context.Context, opts storage.WatchOptions) (storage.Watch, error)
}

// prefix is where CRDs are stored.
const prefix = "/registry/apiextensions.k8s.io/customresourcedefinitions/"

// actor is recorded in history for the controller's own writes.
const actor = "system:skiff:crd-controller"

// teardownGrace is how long the watches of a CRD's resource go on once it
// is no longer served as they knew it, so that they still deliver what was
// already written (the DELETED events of the objects removed with the CRD),
// as Kubernetes waits a second before it tears down the resource's storage.
const teardownGrace = time.Second

// Controller keeps the registry's custom resources in step with the CRDs
// in the store.
type Controller struct {
	store  Store
	reg    *registry.Registry
	tables TableFactory
	log    *slog.Logger

	mu     sync.Mutex
	served map[string]*serving // by CRD name
	// rechecks are the terminating CRDs whose remaining objects are to be
	// looked at again (see recheckLater): false while waiting, true once
	// due; wake tells follow some are due.
	rechecks map[string]bool
	wake     chan struct{}
}

// serving is what the controller serves for one CRD, as of one spec.
type serving struct {
	uid  types.UID
	spec apiextensionsv1.CustomResourceDefinitionSpec
	// gvrs are the registry entries; none once the CRD is gone.
	gvrs []schema.GroupVersionResource
	// terminating: the CRD is being deleted, its entries refuse creates.
	terminating bool
	// retired is every entry's Resource.Retired: closed, after
	// teardownGrace, when the CRD is deleted or its spec changes.
	retired chan struct{}
}

// NewController returns a controller; Start loads and watches CRDs.
func NewController(store Store, reg *registry.Registry, tables TableFactory, log *slog.Logger) *Controller {
	if log == nil {
		log = slog.Default()
	}
	return &Controller{store: store, reg: reg, tables: tables, log: log, served: map[string]*serving{},
		rechecks: map[string]bool{}, wake: make(chan struct{}, 1)}
}

// Start registers every stored CRD, then follows changes until ctx ends.
// It returns once the initial set is served.
func (c *Controller) Start(ctx context.Context) error {
	rev, err := c.loadAll(ctx)
	if err != nil {
		return err
	}
	go c.follow(ctx, rev)
	return nil
}

// loadAll serves every stored CRD and retires those served that are gone
// (deleted while a compaction gap hid their events).
func (c *Controller) loadAll(ctx context.Context) (int64, error) {
	var rev int64
	start := ""
	seen := map[string]bool{}
	for {
		page, err := c.store.List(ctx, storage.ListOptions{Prefix: prefix, StartAfter: start, Revision: rev, Limit: 500})
		if err != nil {
			return 0, err
		}
		rev = page.Revision
		for _, kv := range page.KVs {
			c.apply(ctx, kv)
			seen[keyName(kv.Key)] = true
			start = kv.Key
		}
		if !page.More || len(page.KVs) == 0 {
			break
		}
	}
	c.mu.Lock()
	var gone []string
	for name := range c.served {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	c.mu.Unlock()
	for _, name := range gone {
		c.retire(name)
	}
	return rev, nil
}

// follow watches CRDs, relisting after a compaction gap.
func (c *Controller) follow(ctx context.Context, rev int64) {
	for ctx.Err() == nil {
		w, err := c.store.Watch(ctx, storage.WatchOptions{Prefix: prefix, AfterRevision: rev})
		if err != nil {
			if errors.Is(err, storage.ErrCompacted) {
				if rev, err = c.loadAll(ctx); err == nil {
					continue
				}
			}
			c.log.Warn("crd: watch failed; retrying", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
	events:
		for {
			select {
			case ev, ok := <-w.Events():
				if !ok {
					break events
				}
				rev = ev.Revision
				switch ev.Type {
				case storage.Created, storage.Updated:
					c.apply(ctx, ev.KV)
				case storage.Deleted:
					c.remove(ctx, ev.KV)
				}
			case <-c.wake:
				c.recheck(ctx)
			}
		}
		if err := w.Err(); errors.Is(err, storage.ErrCompacted) {
			if r, err := c.loadAll(ctx); err == nil {
				rev = r
			}
		}
		w.Stop()
	}
}

func decode(kv *storage.KeyValue) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal(kv.Value, crd); err != nil {
		return nil, fmt.Errorf("crd: decoding %s: %w", kv.Key, err)
	}
	crd.ResourceVersion = strconv.FormatInt(kv.ModRevision, 10)
	return crd, nil
}

// apply serves the CRD's versions (or, while it is being deleted, cleans
// up its objects) and publishes its status.
func (c *Controller) apply(ctx context.Context, kv *storage.KeyValue) {
	crd, err := decode(kv)
	if err != nil {
		c.log.Error("crd: skipping undecodable definition", "err", err)
		return
	}
	if crd.DeletionTimestamp != nil {
		c.finalize(ctx, crd, kv)
		return
	}
	c.serve(crd, false)
	c.publishStatus(ctx, crd, kv)
}

// serve registers the CRD's served versions; terminating ones refuse
// creates (see registry.Resource.Terminating). Kubernetes rebuilds (and
// so ends the watches of) a custom resource's storage for any change of
// the CRD's spec, or a new CRD of the same name, and for nothing else:
// the controller's own status and finalizer writes, labels, annotations
// and the start of the CRD's deletion leave the watches opened through
// the entries as they are.
func (c *Controller) serve(crd *apiextensionsv1.CustomResourceDefinition, terminating bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.served[crd.Name]
	sameSpec := old != nil && old.uid == crd.UID && equality.Semantic.DeepEqual(&old.spec, &crd.Spec)
	if sameSpec && old.terminating == terminating {
		return
	}
	now := &serving{uid: crd.UID, spec: *crd.Spec.DeepCopy(), terminating: terminating, retired: make(chan struct{})}
	if sameSpec {
		now.retired = old.retired // the same storage: its watches go on
	}
	keep := map[schema.GroupVersionResource]bool{}
	for _, r := range customResources(crd, c.tables) {
		r.Retired = now.retired
		r.Terminating = terminating
		gvr := schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Name}
		keep[gvr] = true
		now.gvrs = append(now.gvrs, gvr)
		c.reg.Add(r)
	}
	c.served[crd.Name] = now
	if old != nil {
		for _, gvr := range old.gvrs {
			if !keep[gvr] {
				c.reg.Remove(gvr)
			}
		}
		if !sameSpec {
			retireLater(old)
		}
	}
}

// unregisterLocked removes name's entries from the registry and returns
// its serving (nil if not served); c.mu is held.
func (c *Controller) unregisterLocked(name string) *serving {
	s := c.served[name]
	if s == nil {
		return nil
	}
	for _, gvr := range s.gvrs {
		c.reg.Remove(gvr)
	}
	s.gvrs = nil
	return s
}

// retire stops serving a CRD that is gone and ends its watches.
func (c *Controller) retire(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.unregisterLocked(name); s != nil {
		delete(c.served, name)
		retireLater(s)
	}
}

// retireLater ends the watches of s's entries after teardownGrace. s is
// out of the served map, so this runs once per serving.
func retireLater(s *serving) {
	time.AfterFunc(teardownGrace, func() { close(s.retired) })
}

// remove stops serving a deleted CRD and deletes its remaining objects:
// normally none are left, but a CRD whose cleanup finalizer was removed
// by hand goes with objects still stored, which nothing could reach.
func (c *Controller) remove(ctx context.Context, kv *storage.KeyValue) {
	c.retire(keyName(kv.Key))
	crd, err := decode(kv)
	if err != nil {
		return
	}
	c.purgeObjects(ctx, crd)
}

func keyName(key string) string { return key[len(prefix):] }

// objectsPrefix is where crd's custom resources are stored.
func objectsPrefix(crd *apiextensionsv1.CustomResourceDefinition) string {
	return "/registry/" + crd.Spec.Group + "/" + crd.Spec.Names.Plural + "/"
}

// purgeObjects deletes every stored custom resource of crd, finalizers or
// not.
func (c *Controller) purgeObjects(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) {
	ctx = storage.WithActor(ctx, actor)
	for {
		page, err := c.store.List(ctx, storage.ListOptions{Prefix: objectsPrefix(crd), Limit: 500})
		if err != nil || len(page.KVs) == 0 {
			return
		}
		for _, kv := range page.KVs {
			if _, _, err := c.store.Delete(ctx, kv.Key, 0); err != nil && !errors.Is(err, storage.ErrNotFound) {
				c.log.Warn("crd: deleting custom resource", "key", kv.Key, "err", err)
				return
			}
		}
	}
}

// deleteObjects deletes crd's custom resources as a DELETE without options
// would: one with finalizers gets a deletionTimestamp (once) and stays
// until they are removed, the others go. It returns how many remain.
func (c *Controller) deleteObjects(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (remaining int, err error) {
	ctx = storage.WithActor(ctx, actor)
	start := ""
	for {
		page, err := c.store.List(ctx, storage.ListOptions{Prefix: objectsPrefix(crd), StartAfter: start, Limit: 500})
		if err != nil {
			return 0, err
		}
		for _, kv := range page.KVs {
			start = kv.Key
			held, err := c.deleteObject(ctx, kv)
			switch {
			case errors.Is(err, storage.ErrNotFound):
			case errors.Is(err, storage.ErrConflict):
				remaining++ // changed meanwhile: the next look decides
			case err != nil:
				return 0, fmt.Errorf("deleting %s: %w", kv.Key, err)
			case held:
				remaining++
			}
		}
		if !page.More || len(page.KVs) == 0 {
			return remaining, nil
		}
	}
}

// deleteObject deletes one stored custom resource, or marks it deleted
// when finalizers hold it (held), as the API's delete does: a
// deletionTimestamp of now, a grace period of 0, and a new generation.
func (c *Controller) deleteObject(ctx context.Context, kv *storage.KeyValue) (held bool, err error) {
	var obj map[string]any
	if err := json.Unmarshal(kv.Value, &obj); err != nil {
		return false, err
	}
	meta, _ := obj["metadata"].(map[string]any)
	if fins, _ := meta["finalizers"].([]any); len(fins) == 0 {
		_, _, err := c.store.Delete(ctx, kv.Key, kv.ModRevision)
		return false, err
	}
	if _, marked := meta["deletionTimestamp"]; marked {
		return true, nil
	}
	meta["deletionTimestamp"] = time.Now().UTC().Format(time.RFC3339)
	meta["deletionGracePeriodSeconds"] = 0
	if g, ok := meta["generation"].(float64); ok && g > 0 {
		meta["generation"] = g + 1
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return false, err
	}
	_, err = c.store.Update(ctx, kv.Key, data, kv.ModRevision, 0)
	return true, err
}

// cleanupFinalizer is the finalizer Kubernetes puts on CRDs so that their
// objects are deleted before the definition goes.
const cleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io"

// recheckInterval is how often a terminating CRD's remaining objects are
// looked at again (Kubernetes' crdFinalizer polls every 5 s).
const recheckInterval = 5 * time.Second

// finalize handles a CRD with a deletionTimestamp, as Kubernetes'
// crdFinalizer: serve it as terminating, mark it so in its status, delete
// its objects and, once none remain, drop the cleanup finalizer. Objects
// held by finalizers of their own keep the CRD until their controllers
// remove them; they are looked at again every recheckInterval.
func (c *Controller) finalize(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, kv *storage.KeyValue) {
	c.serve(crd, true)
	if !hasFinalizer(crd, cleanupFinalizer) {
		return
	}
	ctx = storage.WithActor(ctx, actor)
	if setTerminating(crd, apiextensionsv1.ConditionTrue, "InstanceDeletionInProgress", "CustomResource deletion is in progress") {
		nkv, err := c.write(ctx, crd, kv)
		if err != nil {
			c.retryUnlessChanged(crd.Name, err)
			return
		}
		kv = nkv
	}
	remaining, err := c.deleteObjects(ctx, crd)
	if err != nil {
		c.log.Warn("crd: deleting custom resources", "crd", crd.Name, "err", err)
		if setTerminating(crd, apiextensionsv1.ConditionTrue, "InstanceDeletionFailed", fmt.Sprintf("could not issue all deletes: %v", err)) {
			_, _ = c.write(ctx, crd, kv)
		}
		c.recheckLater(crd.Name)
		return
	}
	if remaining > 0 {
		c.recheckLater(crd.Name)
		return
	}
	var rest []string
	for _, f := range crd.Finalizers {
		if f != cleanupFinalizer {
			rest = append(rest, f)
		}
	}
	if len(rest) == 0 {
		_, _, err = c.store.Delete(ctx, kv.Key, kv.ModRevision)
	} else {
		crd.Finalizers = rest
		setTerminating(crd, apiextensionsv1.ConditionFalse, "InstanceDeletionCompleted", "removed all instances")
		_, err = c.write(ctx, crd, kv)
	}
	if err != nil {
		c.retryUnlessChanged(crd.Name, err)
	}
}

// retryUnlessChanged looks at a terminating CRD again later when writing it
// failed for a reason other than a newer version (whose event brings it
// back here anyway) or its being gone: a store error sends no event.
func (c *Controller) retryUnlessChanged(name string, err error) {
	if !errors.Is(err, storage.ErrConflict) && !errors.Is(err, storage.ErrNotFound) {
		c.log.Warn("crd: finalizing definition", "crd", name, "err", err)
		c.recheckLater(name)
	}
}

// recheckLater has follow look at the CRD again after recheckInterval,
// once however often it is asked meanwhile.
func (c *Controller) recheckLater(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, waiting := c.rechecks[name]; waiting {
		return
	}
	c.rechecks[name] = false
	time.AfterFunc(recheckInterval, func() {
		c.mu.Lock()
		c.rechecks[name] = true
		c.mu.Unlock()
		select {
		case c.wake <- struct{}{}:
		default: // follow is already woken
		}
	})
}

// recheck applies the CRDs that are due again as they are stored now.
func (c *Controller) recheck(ctx context.Context) {
	var names []string
	c.mu.Lock()
	for name, due := range c.rechecks {
		if due {
			names = append(names, name)
			delete(c.rechecks, name)
		}
	}
	c.mu.Unlock()
	for _, name := range names {
		kv, err := c.store.Get(ctx, prefix+name, 0)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			c.log.Warn("crd: reading definition", "crd", name, "err", err)
			c.recheckLater(name)
			continue
		}
		c.apply(ctx, kv)
	}
}

// setTerminating sets crd's Terminating condition and says whether it
// changed.
func setTerminating(crd *apiextensionsv1.CustomResourceDefinition, status apiextensionsv1.ConditionStatus, reason, msg string) bool {
	cond := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating, Status: status, Reason: reason, Message: msg,
		LastTransitionTime: metav1.NewTime(time.Now().UTC().Truncate(time.Second))}
	for i := range crd.Status.Conditions {
		cur := &crd.Status.Conditions[i]
		if cur.Type != apiextensionsv1.Terminating {
			continue
		}
		if cur.Status == status && cur.Reason == reason && cur.Message == msg {
			return false
		}
		if cur.Status == status {
			cond.LastTransitionTime = cur.LastTransitionTime
		}
		*cur = cond
		return true
	}
	crd.Status.Conditions = append(crd.Status.Conditions, cond)
	return true
}

// publishStatus sets acceptedNames, storedVersions and the NamesAccepted
// and Established conditions once, as the apiextensions controllers do.
func (c *Controller) publishStatus(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, kv *storage.KeyValue) {
	want := crd.DeepCopy()
	want.Status.AcceptedNames = crd.Spec.Names
	storageVersion := ""
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			storageVersion = v.Name
		}
	}
	if storageVersion != "" {
		found := false
		for _, v := range want.Status.StoredVersions {
			if v == storageVersion {
				found = true
			}
		}
		if !found {
			want.Status.StoredVersions = append(want.Status.StoredVersions, storageVersion)
		}
	}
	setCondition(want, apiextensionsv1.NamesAccepted, "NoConflicts", "no conflicts found")
	setCondition(want, apiextensionsv1.Established, "InitialNamesAccepted", "the initial names have been accepted")
	if !hasFinalizer(want, cleanupFinalizer) {
		want.Finalizers = append(want.Finalizers, cleanupFinalizer)
	}
	if equality.Semantic.DeepEqual(want.Status, crd.Status) && equality.Semantic.DeepEqual(want.Finalizers, crd.Finalizers) {
		return
	}
	_, _ = c.write(storage.WithActor(ctx, actor), want, kv)
}

// write stores crd over kv; a conflict means a newer version exists, whose
// own event will bring us back here.
func (c *Controller) write(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, kv *storage.KeyValue) (*storage.KeyValue, error) {
	crd.ResourceVersion = ""
	crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	data, err := json.Marshal(crd)
	if err != nil {
		return nil, err
	}
	nkv, err := c.store.Update(ctx, kv.Key, data, kv.ModRevision, 0)
	if err != nil && !errors.Is(err, storage.ErrConflict) && !errors.Is(err, storage.ErrNotFound) {
		c.log.Warn("crd: updating status", "crd", crd.Name, "err", err)
	}
	return nkv, err
}

func hasFinalizer(crd *apiextensionsv1.CustomResourceDefinition, f string) bool {
	for _, x := range crd.Finalizers {
		if x == f {
			return true
		}
	}
	return false
}

func setCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType, reason, msg string) {
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == t {
			if crd.Status.Conditions[i].Status == apiextensionsv1.ConditionTrue {
				return
			}
			crd.Status.Conditions[i] = apiextensionsv1.CustomResourceDefinitionCondition{Type: t, Status: apiextensionsv1.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
			return
		}
	}
	crd.Status.Conditions = append(crd.Status.Conditions, apiextensionsv1.CustomResourceDefinitionCondition{Type: t, Status: apiextensionsv1.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(time.Now().UTC().Truncate(time.Second))})
}
