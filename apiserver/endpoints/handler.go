package endpoints

import (
	"bytes"
	"context"
	stderrors "errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiffkube/skiff/apiserver/admission"
	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/apiserver/authz"
	"github.com/skiffkube/skiff/apiserver/registry"
	"github.com/skiffkube/skiff/storage"
)

// Store is the part of the revisioned store the handler uses; *storage.Store
// implements it.
type Store interface {
	Create(ctx context.Context, key string, value []byte, ttl time.Duration, opts ...storage.WriteOption) (*storage.KeyValue, error)
	Update(ctx context.Context, key string, value []byte, expectedRevision int64, ttl time.Duration, opts ...storage.WriteOption) (*storage.KeyValue, error)
	Delete(ctx context.Context, key string, expectedRevision int64) (*storage.KeyValue, int64, error)
	Get(ctx context.Context, key string, revision int64) (*storage.KeyValue, error)
	List(ctx context.Context, opts storage.ListOptions) (*storage.ListResult, error)
	Watch(ctx context.Context, opts storage.WatchOptions) (storage.Watch, error)
	Revision(ctx context.Context) (int64, error)
}

// Admission is the stage between authorization and storage
// (admission.Chain): for creates Mutate runs before validation, Validate
// after it; updates pass ValidateUpdate after validation.
type Admission interface {
	Mutate(ctx context.Context, a *admission.Attributes) error
	Validate(ctx context.Context, a *admission.Attributes) (admission.Result, error)
	ValidateUpdate(ctx context.Context, a *admission.Attributes, old runtime.Object) (admission.Result, error)
}

// MaxBodyBytes is the largest request body accepted, as in Kubernetes.
const MaxBodyBytes = 3 << 20

// Config configures a Handler.
type Config struct {
	Store      Store
	Registry   *registry.Registry
	Authorizer authz.Authorizer
	// Admission, when set, may change and refuse objects being created.
	Admission Admission
	Logger    *slog.Logger
	// NodeProxy serves pods/log, exec, attach and portforward from the
	// pod's node; nil answers them with 503.
	NodeProxy NodeProxy
	// MaxWatchTimeout caps (and, when the client gives none, picks a random
	// value below) a watch's duration; 0 means 30 minutes.
	MaxWatchTimeout time.Duration
	// CheckSeeds, when set, has every object the handler leaves for its
	// watchers after a write (see seedOnCommit) compared with a decoding
	// of what was stored, and each difference reported to it. For tests:
	// it decodes every write again.
	CheckSeeds func(error)
}

// Handler serves every resource URL.
type Handler struct {
	store           Store
	reg             *registry.Registry
	authz           authz.Authorizer
	admission       Admission
	log             *slog.Logger
	maxWatchTimeout time.Duration
	fms             *fieldManagers
	createFields    *createFieldsCache
	events          *eventCache
	nodes           NodeProxy
	checkSeeds      func(error)
	// activeNamespaces maps a namespace's name to the store cache's
	// *KeyValue of the state last seen active (see namespaceAcceptsContent).
	activeNamespaces sync.Map
}

// New returns a handler. Store and Registry are required.
func New(cfg Config) (*Handler, error) {
	if cfg.Store == nil || cfg.Registry == nil {
		return nil, fmt.Errorf("endpoints: Config.Store and Config.Registry are required")
	}
	if cfg.Authorizer == nil {
		cfg.Authorizer = authz.AllowAuthenticated{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxWatchTimeout == 0 {
		cfg.MaxWatchTimeout = 30 * time.Minute
	}
	return &Handler{store: cfg.Store, reg: cfg.Registry, authz: cfg.Authorizer, admission: cfg.Admission, log: cfg.Logger, maxWatchTimeout: cfg.MaxWatchTimeout, fms: newFieldManagers(), createFields: newCreateFieldsCache(), events: newEventCache(), nodes: cfg.NodeProxy, checkSeeds: cfg.CheckSeeds}, nil
}

// request is one resource request in flight.
type request struct {
	ctx      context.Context
	w        http.ResponseWriter
	r        *http.Request
	info     RequestInfo
	res      *registry.Resource
	user     *authn.User
	warnings []string
}

// Observed lets a caller (the metrics middleware) learn how a request was
// classified: the verb and resource it named.
type Observed struct {
	// Info is the request's path and verb; Info.IsResourceRequest is false
	// until the handler has parsed a request for a resource it serves.
	Info RequestInfo
}

type observedKey struct{}

// WithObserved returns a context into which ServeHTTP records the request's
// verb and resource.
func WithObserved(ctx context.Context, o *Observed) context.Context {
	return context.WithValue(ctx, observedKey{}, o)
}

// ServeHTTP serves /api/... and /apis/... resource requests. Discovery
// documents are served elsewhere; paths that name no resource get 404.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	info, ok := ParseRequestInfo(r.Method, r.URL.Path, r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1")
	if !ok || !info.IsResourceRequest {
		writeError(w, NotServed(r.Method, schema.GroupResource{}, ""), nil)
		return
	}
	resource := info.Resource
	if info.Subresource != "" {
		resource += "/" + info.Subresource
	}
	// A CPU profile of the server (/debug/pprof/profile) splits the time
	// spent serving requests by what they asked for: go tool pprof
	// -tagfocus resource=events, or -tags for the table. The labels are
	// this goroutine's while it serves (a watch's deliveries included) and
	// of the goroutines it starts; work on the store's own goroutines (the
	// group commit, the watch hub) carries none. The goroutine may serve
	// other requests next, so the request's own labels (none) come back.
	pprof.SetGoroutineLabels(pprof.WithLabels(r.Context(), pprof.Labels("group", info.Group, "resource", resource, "verb", info.Verb)))
	defer pprof.SetGoroutineLabels(r.Context())
	res, ok := h.reg.Get(schema.GroupVersionResource{Group: info.Group, Version: info.Version, Resource: info.Resource})
	if !ok {
		writeErrorAs(w, NotServed(r.Method, schema.GroupResource{Group: info.Group, Resource: info.Resource}, info.Name), nil, statusEncoding(r.Header.Get("Accept")))
		return
	}
	// Counted by what it names only once that is served: a made-up path
	// would otherwise add metric series without bound.
	if o, ok := r.Context().Value(observedKey{}).(*Observed); ok {
		o.Info = info
	}
	user, _ := authn.UserFrom(r.Context())
	req := &request{ctx: r.Context(), w: w, r: r, info: info, res: res, user: user}
	if user != nil {
		req.ctx = storage.WithActor(req.ctx, user.Name)
	}
	if err := h.authorize(req); err != nil {
		req.fail(err)
		return
	}
	if info.Verb == "watch" && r.Method != http.MethodGet && r.Method != http.MethodHead {
		// A POST or DELETE to /watch/...: authorized as the watch it
		// names, served as nothing, as Kubernetes registers only GET there.
		req.fail(errors.NewMethodNotSupported(res.GroupResource(), strings.ToLower(r.Method)))
		return
	}
	if !res.Namespaced && info.Namespace != "" {
		// Kubernetes registers cluster-scoped kinds at the cluster scope
		// only: /namespaces/<ns>/nodes is no path it serves (404, after
		// authorization as there). Serving it would let a namespace's
		// RBAC decide about cluster-wide objects.
		writeErrorAs(w, NotServed(r.Method, res.GroupResource(), info.Name), nil, statusEncoding(r.Header.Get("Accept")))
		return
	}
	if _, onNode := nodeSubresources[info.Subresource]; onNode {
		// Streams are hijacked and proxied whole: no body limit.
		if err := h.serveNodeSubresource(req); err != nil {
			writeError(w, err, req.warnings)
		}
		return
	}
	if r.Body != nil && r.Method != http.MethodGet {
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	}
	var err error
	switch {
	case res.Virtual != nil:
		err = h.serveVirtual(req)
	case info.Subresource == "":
		err = h.serveMain(req)
	case info.Subresource == "status":
		err = h.serveStatus(req)
	case info.Subresource == "scale":
		err = h.serveScale(req)
	case info.Subresource == "finalize":
		err = h.serveFinalize(req)
	case info.Subresource == "binding":
		err = h.serveBinding(req)
	case info.Subresource == "eviction":
		err = h.serveEviction(req)
	case res.Subresources.Actions[info.Subresource] != nil:
		err = h.serveAction(req, res.Subresources.Actions[info.Subresource])
	default:
		err = errors.NewNotFound(res.GroupResource(), info.Name)
	}
	if err != nil {
		req.fail(err)
	}
}

func (h *Handler) serveMain(req *request) error {
	switch req.info.Verb {
	case "get":
		return h.get(req)
	case "list":
		return h.list(req)
	case "watch":
		return h.watch(req)
	case "create":
		if req.info.Name != "" {
			return errors.NewMethodNotSupported(req.res.GroupResource(), "create")
		}
		if req.res.Terminating {
			err := errors.NewMethodNotSupported(req.res.GroupResource(), "create")
			err.ErrStatus.Message = "create not allowed while custom resource definition is terminating"
			return err
		}
		return h.create(req)
	case "update":
		return h.update(req, req.res.Strategy)
	case "patch":
		return h.patch(req, req.res.Strategy)
	case "delete":
		return h.delete(req)
	case "deletecollection":
		return h.deleteCollection(req)
	}
	return errors.NewMethodNotSupported(req.res.GroupResource(), req.info.Verb)
}

// serveVirtual serves a create-only resource whose objects are computed,
// not stored (the review APIs).
func (h *Handler) serveVirtual(req *request) error {
	if req.info.Verb != "create" || req.info.Subresource != "" || req.info.Name != "" {
		return errors.NewMethodNotSupported(req.res.GroupResource(), req.info.Verb)
	}
	in, _, err := h.decodeWrite(req)
	if err != nil {
		return err
	}
	out, err := req.res.Virtual(req.ctx, req.info.Namespace, in)
	if err != nil {
		return err
	}
	out.GetObjectKind().SetGroupVersionKind(req.res.GVK())
	return h.respond(req, http.StatusCreated, out)
}

// serveAction serves a create-only subresource such as serviceaccounts/token.
func (h *Handler) serveAction(req *request, act *registry.Action) error {
	if req.info.Verb != "create" || req.info.Name == "" {
		return errors.NewMethodNotSupported(schema.GroupResource{Group: req.res.Group, Resource: req.res.Name + "/" + req.info.Subresource}, req.info.Verb)
	}
	body, err := readBody(req)
	if err != nil {
		return err
	}
	validation, err := req.fieldValidation()
	if err != nil {
		return err
	}
	shape := &registry.Resource{Group: act.GVK.Group, Version: act.GVK.Version, Kind: act.GVK.Kind, New: act.New}
	d, err := decodeObject(shape, act.GVK, contentType(req.r.Header.Get("Content-Type")), body, validation)
	if err != nil {
		return err
	}
	req.warnings = append(req.warnings, d.warnings...)
	// As Kubernetes' create handler (EnsureObjectNamespaceMatchesRequest-
	// Namespace), for subresources too: a body of another namespace is a
	// 400; one without a namespace takes the URL's.
	if m, err := meta.Accessor(d.obj); err == nil && req.res.Namespaced {
		if err := h.checkNamespace(req, m); err != nil {
			return err
		}
	}
	out, err := act.Create(req.ctx, req.info.Namespace, req.info.Name, d.obj)
	if err != nil {
		return err
	}
	out.GetObjectKind().SetGroupVersionKind(act.GVK)
	writeObject(req.w, http.StatusCreated, out, req.warnings)
	return nil
}

func (h *Handler) serveStatus(req *request) error {
	if !req.res.Subresources.Status {
		return errors.NewNotFound(req.res.GroupResource(), req.info.Name)
	}
	st := req.res.Strategy
	if ss, ok := st.(registry.StatusStrategist); ok {
		st = ss.StatusStrategy()
	}
	switch req.info.Verb {
	case "get":
		return h.get(req)
	case "update":
		return h.update(req, st)
	case "patch":
		return h.patch(req, st)
	}
	return errors.NewMethodNotSupported(schema.GroupResource{Group: req.res.Group, Resource: req.res.Name + "/status"}, req.info.Verb)
}

func (h *Handler) authorize(req *request) error { return h.authorizeVerb(req, req.info.Verb) }

// authorizeVerb asks about the request as if it were verb: a write that
// turns into another one (an apply that creates) is authorized for that
// one too.
func (h *Handler) authorizeVerb(req *request, verb string) error {
	attrs := authz.Attributes{
		User: req.user, Verb: verb, APIGroup: req.info.Group, APIVersion: req.info.Version,
		Resource: req.info.Resource, Subresource: req.info.Subresource,
		Namespace: req.info.Namespace, Name: req.info.Name, ResourceRequest: true, Path: req.r.URL.Path,
		FieldSelector: req.query("fieldSelector"),
	}
	if attrs.APIGroup == "" && attrs.Resource == "namespaces" && attrs.Name != "" {
		// A namespace is inside itself for authorization, as in
		// Kubernetes: a RoleBinding in "dev" may grant get on namespace dev.
		attrs.Namespace = attrs.Name
	}
	if (verb == "list" || verb == "watch") && attrs.Name == "" {
		// A list or watch whose field selector names one object is asked
		// about that object, as Kubernetes' NewRequestInfo does: a rule
		// with resourceNames covers it (kubectl get secret x -w), and the
		// handler applies the same selector.
		attrs.Name = selectedName(attrs.FieldSelector)
	}
	ok, reason, err := h.authz.Authorize(req.ctx, attrs)
	if err != nil {
		return errors.NewInternalError(err)
	}
	if ok {
		return nil
	}
	name := "system:anonymous"
	if req.user != nil {
		name = req.user.Name
	}
	res := req.info.Resource
	if req.info.Subresource != "" {
		res += "/" + req.info.Subresource
	}
	// Kubernetes' wording: every request without a namespace, cluster-scoped
	// resources included, is "at the cluster scope".
	msg := fmt.Sprintf("User %q cannot %s resource %q in API group %q", name, verb, res, req.info.Group)
	if attrs.Namespace != "" {
		msg += fmt.Sprintf(" in the namespace %q", attrs.Namespace)
	} else {
		msg += " at the cluster scope"
	}
	if reason != "" {
		msg += ": " + reason
	}
	// Named as asked about, as Kubernetes names the attributes' name: a
	// list by metadata.name is refused for that object.
	return errors.NewForbidden(req.res.GroupResource(), attrs.Name, stderrors.New(msg))
}

// selectedName is the name a field selector requires metadata.name to
// equal, if it is one a path could carry; else "".
func selectedName(selector string) string {
	if selector == "" {
		return ""
	}
	fs, err := fields.ParseSelector(selector)
	if err != nil {
		return ""
	}
	name, ok := fs.RequiresExactMatch("metadata.name")
	if !ok || len(path.IsValidPathSegmentName(name)) > 0 {
		return ""
	}
	return name
}

// readBody reads the request body within the size limit.
func readBody(req *request) ([]byte, error) {
	if req.r.Body == nil {
		return nil, nil
	}
	data, err := readAll(req.r.Body, req.r.ContentLength)
	if err != nil {
		var mbe *http.MaxBytesError
		if stderrors.As(err, &mbe) {
			return nil, tooLarge()
		}
		return nil, errors.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	return data, nil
}

// readAll is io.ReadAll for a body whose length the client declared (and
// net/http holds it to): the buffer starts at that size (plus the room
// bytes.Buffer wants to see the end), not grown from 512 bytes with a copy
// of the body at each step. Whatever the body turns out to be, the result
// is io.ReadAll's.
func readAll(body io.Reader, declared int64) ([]byte, error) {
	if declared <= 0 || declared > MaxBodyBytes {
		return io.ReadAll(body)
	}
	buf := bytes.NewBuffer(make([]byte, 0, declared+bytes.MinRead))
	_, err := buf.ReadFrom(body)
	return buf.Bytes(), err
}

// writeObject sends an object as JSON with the given status code.
func writeObject(w http.ResponseWriter, code int, obj runtime.Object, warnings []string) {
	writeEncoded(w, code, obj, warnings, encJSON)
}

// writeEncoded sends an object in the given encoding. An object without a
// protobuf form goes out as JSON, which every client decodes by the reply's
// Content-Type.
func writeEncoded(w http.ResponseWriter, code int, obj runtime.Object, warnings []string, enc encoding) {
	if enc == encProtobuf {
		if data, err := encodeProtobuf(obj); err == nil {
			writeRaw(w, code, mediaProtobuf, data, warnings)
			return
		}
	}
	data, err := encodeObject(obj)
	if err != nil {
		writeError(w, errors.NewInternalError(err), warnings)
		return
	}
	writeRaw(w, code, mediaJSON, data, warnings)
}

func writeRaw(w http.ResponseWriter, code int, contentType string, data []byte, warnings []string) {
	setWarnings(w, warnings)
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// writeError sends an error as a metav1.Status with its code.
func writeError(w http.ResponseWriter, err error, warnings []string) {
	writeErrorAs(w, err, warnings, encJSON)
}

// writeErrorAs is writeError in a chosen encoding.
func writeErrorAs(w http.ResponseWriter, err error, warnings []string, enc encoding) {
	st := asStatus(err)
	writeEncoded(w, int(st.Code), &st, warnings, enc)
}

// WriteError is writeError for callers outside the package (authn failures).
func WriteError(w http.ResponseWriter, err error) { writeError(w, err, nil) }

// query returns a query parameter.
func (req *request) query(name string) string { return req.r.URL.Query().Get(name) }

// dryRun tells whether the request asked dryRun=All.
func (req *request) dryRun() (bool, error) {
	vals := req.r.URL.Query()["dryRun"]
	for _, v := range vals {
		if v != "All" {
			return false, errors.NewBadRequest(fmt.Sprintf("Invalid dry run value %q: supported values are [\"All\"]", v))
		}
	}
	return len(vals) > 0, nil
}

// fieldValidation returns the fieldValidation directive (default Warn for
// JSON objects, as Kubernetes does since 1.27).
func (req *request) fieldValidation() (string, error) {
	v := req.query("fieldValidation")
	switch strings.ToLower(v) {
	case "":
		return fieldValidWarn, nil
	case "strict":
		return fieldValidStrict, nil
	case "warn":
		return fieldValidWarn, nil
	case "ignore":
		return fieldValidIgnore, nil
	}
	return "", errors.NewBadRequest(fmt.Sprintf("fieldValidation must be one of Ignore, Warn or Strict, got %q", v))
}
