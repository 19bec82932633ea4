package endpoints

import (
	"encoding/base64"
	"encoding/json"
	stderrors "errors"
	"fmt"
	"net/http"
	"strconv"

	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiffkube/skiff/apiserver/registry"
	"github.com/skiffkube/skiff/storage"
)

// get serves GET of one object (also of its status subresource). With
// resourceVersion=0 ("any version", what the kubelet asks for its node
// before each status update) the answer may come from the store's cache,
// as Kubernetes serves it from its watch cache; otherwise, and when the
// cache does not hold the key, it is the newest state in the database.
//
// Any other resourceVersion asks for a state not older than it: the newest
// is, unless the store has not reached that revision yet (504, as
// Kubernetes answers once its watch cache has waited for it in vain).
func (h *Handler) get(req *request) error {
	rvParam := req.query("resourceVersion")
	obj, kv, _, err := h.loadMaybeCached(req, req.info.Namespace, req.info.Name, rvParam == "0")
	if err != nil {
		return err
	}
	if rv, err := parseRV(rvParam); err == nil && rv > kv.ModRevision {
		current, err := h.store.Revision(req.ctx)
		if err != nil {
			return storeError(err, req.res.GroupResource(), req.info.Name)
		}
		if rv > current {
			return tooLargeRV(rv, current)
		}
	}
	return h.respond(req, http.StatusOK, obj)
}

// load reads one object at the newest revision.
func (h *Handler) load(req *request, ns, name string) (runtime.Object, *storage.KeyValue, error) {
	obj, kv, _, err := h.loadMaybeCached(req, ns, name, false)
	return obj, kv, err
}

// loadMaybeCached is load that, with cached set, first tries the store's
// cache; fromCache tells whether the answer came from there (then it may
// be stale, and only a compare-and-swap write may rely on it). Misses read
// the database.
func (h *Handler) loadMaybeCached(req *request, ns, name string, cached bool) (obj runtime.Object, kv *storage.KeyValue, fromCache bool, err error) {
	if req.res.Namespaced && ns == "" {
		return nil, nil, false, errors.NewNotFound(req.res.GroupResource(), name)
	}
	key := req.res.Key(ns, name)
	if cg, ok := h.store.(storage.CachedGetter); ok && cached {
		if ckv, found, ok := cg.GetCached(key); ok && found {
			kv, fromCache = ckv, true
		}
	}
	if kv == nil {
		if kv, err = h.store.Get(req.ctx, key, 0); err != nil {
			return nil, nil, false, storeError(err, req.res.GroupResource(), name)
		}
	}
	obj, err = h.events.object(req.res, kv)
	if err != nil {
		return nil, nil, false, errors.NewInternalError(err)
	}
	return obj, kv, fromCache, nil
}

// selection is a parsed label and field selector pair.
type selection struct {
	labels labels.Selector
	fields fields.Selector
}

func parseSelection(req *request) (*selection, error) {
	ls, err := labels.Parse(req.query("labelSelector"))
	if err != nil {
		return nil, errors.NewBadRequest(err.Error())
	}
	fs, err := fields.ParseSelector(req.query("fieldSelector"))
	if err != nil {
		return nil, errors.NewBadRequest(err.Error())
	}
	if err := req.res.CheckFieldSelector(fs); err != nil {
		return nil, errors.NewBadRequest(err.Error())
	}
	return &selection{labels: ls, fields: fs}, nil
}

// onlyName narrows the selection to the object called name, as Kubernetes'
// ListResource narrows a named watch (/watch/namespaces/<ns>/pods/<name>):
// what the path names is what was authorized, so a field selector may
// repeat that name but not name another object.
func (s *selection) onlyName(name string) error {
	if s.fields.Empty() {
		s.fields = fields.OneTermEqualSelector("metadata.name", name)
		return nil
	}
	if v, ok := s.fields.RequiresExactMatch("metadata.name"); !ok || v != name {
		return errors.NewBadRequest("fieldSelector metadata.name doesn't match requested name")
	}
	return nil
}

func (s *selection) everything() bool { return s.labels.Empty() && s.fields.Empty() }

// matches tells whether an object is selected.
func (s *selection) matches(res *registry.Resource, obj runtime.Object) bool {
	return s.matchesWith(obj, func() (fields.Set, error) { return res.FieldSet(obj) })
}

// matchesShared is matches for a watch event's shared object, whose field
// set is computed once for all the watchers that select on fields.
func (s *selection) matchesShared(res *registry.Resource, e *sharedEvent) bool {
	return s.matchesWith(e.obj, func() (fields.Set, error) { return e.fieldSet(res) })
}

func (s *selection) matchesWith(obj runtime.Object, fieldSet func() (fields.Set, error)) bool {
	if s.everything() {
		return true
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	if !s.labels.Matches(labels.Set(m.GetLabels())) {
		return false
	}
	if s.fields.Empty() {
		return true
	}
	set, err := fieldSet()
	if err != nil {
		return false
	}
	return s.fields.Matches(set)
}

// listPrefix narrows the storage prefix by namespace (from the URL or a
// metadata.namespace=X field selector).
func listPrefix(res *registry.Resource, ns string, sel *selection) string {
	if ns == "" && res.Namespaced {
		if v, ok := sel.fields.RequiresExactMatch("metadata.namespace"); ok && v != "" {
			ns = v
		}
	}
	return res.NamespacePrefix(ns)
}

// continueToken is the opaque continue value: the list's pinned revision and
// the last key returned. Revision -1 (continueAtNewest) goes on at the newest
// revision: the token a 410 for a compacted continue carries, as Kubernetes'.
type continueToken struct {
	Rev   int64  `json:"rv"`
	Start string `json:"start"`
}

const continueAtNewest = -1

func encodeContinue(rev int64, start string) string {
	b, _ := json.Marshal(continueToken{Rev: rev, Start: start})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(s string) (continueToken, error) {
	var t continueToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	if err != nil || t.Rev <= 0 && t.Rev != continueAtNewest {
		return t, errors.NewBadRequest("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	}
	return t, nil
}

// listed is the outcome of collecting a (page of a) list.
type listed struct {
	items    []runtime.Object
	revision int64
	cont     string
}

// collect reads matching objects under prefix at revision (0 = newest, or
// with anyRevision whatever the store's cache holds: resourceVersion=0),
// starting after startAfter, until limit items (0 = all) are found.
func (h *Handler) collect(req *request, prefix string, sel *selection, revision int64, anyRevision bool, startAfter string, limit int64) (*listed, error) {
	out := &listed{revision: revision}
	for {
		want := 0
		if limit > 0 {
			want = int(limit) - len(out.items)
		}
		page, err := h.store.List(req.ctx, storage.ListOptions{Prefix: prefix, StartAfter: startAfter, Revision: out.revision, Limit: want,
			AnyRevision: anyRevision && out.revision == 0})
		if err != nil {
			return nil, err
		}
		out.revision = page.Revision
		for _, kv := range page.KVs {
			obj, err := decodeKV(req.res, kv)
			if err != nil {
				return nil, errors.NewInternalError(err)
			}
			if sel.matches(req.res, obj) {
				out.items = append(out.items, obj)
			}
			startAfter = kv.Key
		}
		if !page.More || len(page.KVs) == 0 {
			return out, nil
		}
		if limit > 0 && int64(len(out.items)) >= limit {
			out.cont = encodeContinue(out.revision, startAfter)
			return out, nil
		}
	}
}

// list serves GET of a collection.
func (h *Handler) list(req *request) error {
	sel, err := parseSelection(req)
	if err != nil {
		return err
	}
	var limit int64
	if s := req.query("limit"); s != "" {
		limit, err = strconv.ParseInt(s, 10, 64)
		if err != nil || limit < 0 {
			return errors.NewBadRequest(fmt.Sprintf("invalid limit %q", s))
		}
	}
	if err := validateListOptions(req, false); err != nil {
		return err
	}
	rvParam, match := req.query("resourceVersion"), req.query("resourceVersionMatch")
	rv, err := parseRV(rvParam)
	if err != nil {
		return errors.NewBadRequest(err.Error())
	}
	var revision int64
	startAfter := ""
	switch {
	case req.query("continue") != "":
		if rvParam != "" && rvParam != "0" {
			return errors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		tok, err := decodeContinue(req.query("continue"))
		if err != nil {
			return err
		}
		revision, startAfter = max(tok.Rev, 0), tok.Start
	case match == "Exact":
		revision = rv
	case match == "" && limit > 0 && rv > 0:
		// Kubernetes' legacy rule: a paginated list at a non-zero
		// resourceVersion with no match asked for is an Exact one.
		revision = rv
	}
	prefix := listPrefix(req.res, req.info.Namespace, sel)
	// resourceVersion=0 means any recent state will do (Kubernetes serves it
	// from its watch cache); skiff serves it from the store's list cache.
	anyRevision := rvParam == "0" && match != "Exact" && req.query("continue") == ""
	got, err := h.collect(req, prefix, sel, revision, anyRevision, startAfter, limit)
	if err != nil {
		if stderrors.Is(err, storage.ErrCompacted) {
			if req.query("continue") == "" {
				return errors.NewResourceExpired("The resourceVersion for the provided list is too old.")
			}
			// As etcd3's store: the rest of the list may still be read,
			// at the newest revision, with the token this Status carries.
			expired := errors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. " +
				"You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. " +
				"Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.")
			expired.ErrStatus.ListMeta.Continue = encodeContinue(continueAtNewest, startAfter)
			return expired
		}
		if stderrors.Is(err, storage.ErrFutureRevision) {
			if current, rerr := h.store.Revision(req.ctx); rerr == nil {
				return tooLargeRV(revision, current)
			}
		}
		return storeError(err, req.res.GroupResource(), "")
	}
	if revision == 0 && rv > 0 && got.revision < rv {
		return tooLargeRV(rv, got.revision)
	}
	list := newList(req.res)
	if err := meta.SetList(list, got.items); err != nil {
		return errors.NewInternalError(err)
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return errors.NewInternalError(err)
	}
	lm.SetResourceVersion(strconv.FormatInt(got.revision, 10))
	lm.SetContinue(got.cont)
	return h.respond(req, http.StatusOK, list)
}
