package registry

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource is one served resource in one group/version.
type Resource struct {
	Group    string
	Version  string
	Name     string // plural, lower case: "deployments"
	Singular string
	Kind     string
	ListKind string

	Namespaced bool
	ShortNames []string
	Categories []string

	// New returns an empty typed object of Kind. Nil means the resource is
	// served as unstructured JSON (custom resources).
	New func() runtime.Object
	// NewList returns an empty typed list; nil for unstructured resources.
	NewList func() runtime.Object

	// Strategy prepares, defaults and validates objects for writes.
	Strategy Strategy
	// Subresources lists what is served below an object.
	Subresources Subresources
	// SelectableFields are the dotted paths a field selector may name
	// besides metadata.name and metadata.namespace ("spec.nodeName").
	SelectableFields []string
	// FieldLabels are the selectable fields whose label is not their JSON
	// path (Kubernetes' Job "status.successful" reads status.succeeded).
	FieldLabels map[string]FieldLabel
	// CreateOnUpdate: a PUT of an object that does not exist creates it,
	// as Kubernetes' strategies allow for Endpoints, Leases, LimitRanges
	// and RBAC roles and bindings (AllowCreateOnUpdate).
	CreateOnUpdate bool
	// TTL, when set, makes every stored object expire (Events).
	TTL time.Duration
	// StorageGroup overrides the key prefix's group part where Kubernetes
	// stores two API groups in one place (events.k8s.io shares core events).
	StoragePrefix string
	// Stored, when set, is the kind the objects are stored as and the
	// conversions to and from it; nil stores the served kind.
	Stored *StoredForm
	// Table converts objects of this resource to a Table; nil uses the
	// registry's default converter.
	Table TableConvertor
	// NoProtobuf marks kinds that have no protobuf encoding (unstructured).
	NoProtobuf bool
	// Verbs overrides the default verb set (all of them).
	Verbs []string
	// Terminating marks a custom resource whose CRD is being deleted: its
	// objects stay readable, updatable and deletable (their finalizers
	// must still be removable) but creates are refused, and discovery
	// lists TerminatingVerbs, as Kubernetes does while it deletes them.
	Terminating bool
	// Lifecycle, when set, allocates and releases what objects hold
	// outside the store's object (service IPs and ports).
	Lifecycle Lifecycle
	// WriteGuard, when set, is asked after validation on every create and
	// update (patch and apply included) whether the requesting user (in
	// ctx) may write obj over old (nil for a create); an error (an API
	// error, usually Forbidden) stops the write. RBAC uses it to refuse
	// privilege escalation, the node restriction to keep a node to its own
	// objects.
	WriteGuard func(ctx context.Context, obj, old runtime.Object) error
	// Virtual, when set, makes the resource create-only and unstored, like
	// Kubernetes' review APIs (SubjectAccessReview, TokenReview): a POST is
	// decoded, handed to Virtual, and its result returned with 201.
	Virtual VirtualCreate
	// Retired, when set, is closed once this entry stops being served as
	// it is (a custom resource whose CRD was deleted or its spec changed).
	// Watches opened through it end then, so that their clients re-list
	// against what is served now; nil: never.
	Retired <-chan struct{}
}

// VirtualCreate answers a POST of a virtual resource. namespace is the
// request's namespace for namespaced resources. Errors should be API
// errors (k8s.io/apimachinery/pkg/api/errors).
type VirtualCreate func(ctx context.Context, namespace string, obj runtime.Object) (runtime.Object, error)

// Subresources says which subresources an object of a resource has.
type Subresources struct {
	Status bool
	// Scale, when set, serves autoscaling/v1 Scale at <name>/scale.
	Scale *ScalePaths
	// Finalize serves namespaces/<name>/finalize.
	Finalize bool
	// Binding and Eviction are the pod subresources that act on the parent.
	Binding  bool
	Eviction bool
	// Actions are create-only subresources answered by a function of the
	// parent, with their own kind (serviceaccounts/token → TokenRequest).
	Actions map[string]*Action
}

// Action is a create-only subresource: a POST of GVK to
// <parent>/<name>/<subresource> is decoded into New() and answered by
// Create, which returns the reply object (of GVK) or an API error.
type Action struct {
	GVK    schema.GroupVersionKind
	New    func() runtime.Object
	Create func(ctx context.Context, namespace, name string, obj runtime.Object) (runtime.Object, error)
}

// ScalePaths are the dotted JSON paths the Scale subresource maps.
type ScalePaths struct {
	SpecReplicas   string // "spec.replicas"
	StatusReplicas string // "status.replicas"
	// LabelSelector is the path of a label selector, either a metav1.LabelSelector
	// object ("spec.selector") or a string in selector syntax.
	LabelSelector string
	// LabelSet says that LabelSelector's object is a map of labels each
	// selected object carries (a ReplicationController's spec.selector),
	// not a metav1.LabelSelector: the two are both JSON objects.
	LabelSet bool
}

// GroupVersion returns the resource's API group/version.
func (r *Resource) GroupVersion() schema.GroupVersion {
	return schema.GroupVersion{Group: r.Group, Version: r.Version}
}

// GVK returns the resource's kind.
func (r *Resource) GVK() schema.GroupVersionKind {
	return r.GroupVersion().WithKind(r.Kind)
}

// GroupResource is what error messages name ("deployments.apps").
func (r *Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Name}
}

// APIVersion is the apiVersion field of objects ("apps/v1", "v1").
func (r *Resource) APIVersion() string {
	return r.GroupVersion().String()
}

// KeyPrefix is the storage prefix of all objects, ending in "/":
// /registry/<resource>/ for the core group, /registry/<group>/<resource>/ else.
func (r *Resource) KeyPrefix() string {
	if r.StoragePrefix != "" {
		return r.StoragePrefix
	}
	if r.Group == "" {
		return "/registry/" + r.Name + "/"
	}
	return "/registry/" + r.Group + "/" + r.Name + "/"
}

// NamespacePrefix is the storage prefix of the objects in one namespace; for
// cluster-scoped resources or namespace "" it is KeyPrefix.
func (r *Resource) NamespacePrefix(namespace string) string {
	if !r.Namespaced || namespace == "" {
		return r.KeyPrefix()
	}
	return r.KeyPrefix() + namespace + "/"
}

// Key is the storage key of one object.
func (r *Resource) Key(namespace, name string) string {
	if r.Namespaced {
		return r.KeyPrefix() + namespace + "/" + name
	}
	return r.KeyPrefix() + name
}

// Unstructured tells whether objects are handled as unstructured JSON.
func (r *Resource) Unstructured() bool { return r.New == nil }

// AllVerbs is the default verb set of a resource.
var AllVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// TerminatingVerbs are what discovery lists for a terminating custom
// resource (Kubernetes' discovery controller drops create, patch and
// update then, although only create is refused).
var TerminatingVerbs = []string{"delete", "deletecollection", "get", "list", "watch"}

// ResourceVerbs returns the verbs served for the resource.
func (r *Resource) ResourceVerbs() []string {
	if r.Terminating {
		return TerminatingVerbs
	}
	if r.Verbs != nil {
		return r.Verbs
	}
	return AllVerbs
}

// Registry holds the served resources. It is safe for concurrent use.
type Registry struct {
	mu        sync.RWMutex
	byGVR     map[schema.GroupVersionResource]*Resource
	listeners []func()
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{byGVR: map[schema.GroupVersionResource]*Resource{}}
}

// Add registers or replaces a resource.
func (g *Registry) Add(r *Resource) {
	if r.ListKind == "" {
		r.ListKind = r.Kind + "List"
	}
	if r.Singular == "" {
		r.Singular = strings.ToLower(r.Kind)
	}
	if r.Strategy == nil {
		r.Strategy = &DefaultStrategy{}
	}
	g.mu.Lock()
	g.byGVR[schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Name}] = r
	ls := g.listeners
	g.mu.Unlock()
	for _, l := range ls {
		l()
	}
}

// Remove unregisters a resource; a no-op when absent.
func (g *Registry) Remove(gvr schema.GroupVersionResource) {
	g.mu.Lock()
	delete(g.byGVR, gvr)
	ls := g.listeners
	g.mu.Unlock()
	for _, l := range ls {
		l()
	}
}

// OnChange registers a callback run after every Add or Remove (discovery
// uses it to drop cached documents).
func (g *Registry) OnChange(f func()) {
	g.mu.Lock()
	g.listeners = append(g.listeners, f)
	g.mu.Unlock()
}

// Get returns the resource for a group/version/plural.
func (g *Registry) Get(gvr schema.GroupVersionResource) (*Resource, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	r, ok := g.byGVR[gvr]
	return r, ok
}

// ForKind returns the resource serving a kind, if any.
func (g *Registry) ForKind(gvk schema.GroupVersionKind) (*Resource, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	for _, r := range g.byGVR {
		if r.Group == gvk.Group && r.Version == gvk.Version && r.Kind == gvk.Kind {
			return r, true
		}
	}
	return nil, false
}

// All returns every resource sorted by group, version, name.
func (g *Registry) All() []*Resource {
	g.mu.RLock()
	out := make([]*Resource, 0, len(g.byGVR))
	for _, r := range g.byGVR {
		out = append(out, r)
	}
	g.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.Name < b.Name
	})
	return out
}

// GroupVersions returns the served versions per group, in registration
// order of preference (the first is the preferred version).
func (g *Registry) GroupVersions() map[string][]string {
	out := map[string][]string{}
	for _, r := range g.All() {
		vs := out[r.Group]
		found := false
		for _, v := range vs {
			if v == r.Version {
				found = true
			}
		}
		if !found {
			out[r.Group] = append(vs, r.Version)
		}
	}
	return out
}

// Lifecycle is implemented by resources that hold resources outside their
// object (a Service's cluster IP and node ports). Allocation happens only for
// writes that passed validation, and what an update gives up is released only
// once the write is stored, so a rejected, dry-run, no-op or conflicting
// write never frees what the stored object still holds.
type Lifecycle interface {
	// BeforeCreate allocates what a validated new object needs.
	BeforeCreate(ctx context.Context, obj runtime.Object) (Allocation, error)
	// PrepareUpdate fills what an update may omit but the object keeps
	// (a Service's cluster IP, the node ports of unchanged ports) from old.
	// It allocates nothing and runs before validation.
	PrepareUpdate(obj, old runtime.Object)
	// BeforeUpdate allocates what a validated update newly needs.
	BeforeUpdate(ctx context.Context, obj, old runtime.Object) (Allocation, error)
	AfterDelete(ctx context.Context, obj runtime.Object)
}

// DryRunner is a Lifecycle that can stand in for itself in a server-side
// dry run: DryRun's Lifecycle refuses what a real write would be refused
// (a value already allocated) but takes nothing.
type DryRunner interface {
	DryRun() Lifecycle
}

// Allocation is what a Lifecycle took for one write. The handler calls
// exactly one of its methods: Commit once the write is stored (releasing
// what the old object held and the new one does not), Abort when it is not
// (giving back what was taken).
type Allocation interface {
	Commit()
	Abort()
}

// FieldLabel is where a field selector label reads its value.
type FieldLabel struct {
	// Path is the dotted JSON path read.
	Path string
	// Else, when set, is a second path read when Path is absent or empty
	// (a core Event's source: its source.component, else its
	// reportingComponent).
	Else string
	// Absent is the value when Path (and Else) are absent or omitted as
	// empty: "0" for a count, "false" for a bool, which Kubernetes always
	// renders.
	Absent string
}
