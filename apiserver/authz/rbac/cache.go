package rbac

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/skiffkube/skiff/apiserver/authz/follow"
	"github.com/skiffkube/skiff/storage"
)

// Store is the part of the revisioned store the cache reads.
type Store = follow.Store

// Prefix is where the four RBAC resources are stored; one watch on it
// follows them all.
const Prefix = "/registry/rbac.authorization.k8s.io/"

const (
	roleKind               = "roles"
	roleBindingKind        = "rolebindings"
	clusterRoleKind        = "clusterroles"
	clusterRoleBindingKind = "clusterrolebindings"
)

// subjectKind tells user subjects from group subjects in the index. A
// service account subject is indexed as its user name,
// system:serviceaccount:<namespace>:<name>, which is how Kubernetes matches it.
type subjectKind uint8

const (
	subjectUser subjectKind = iota + 1
	subjectGroup
)

// indexKey finds the bindings of one subject in one namespace ("" for
// ClusterRoleBindings).
type indexKey struct {
	kind      subjectKind
	name      string
	namespace string
}

// binding is what the index keeps of a RoleBinding or ClusterRoleBinding.
type binding struct {
	key       string // storage key, to remove it again
	namespace string // "" for a ClusterRoleBinding
	roleRef   rbacv1.RoleRef
	subjects  []indexKey
}

// Cache holds RBAC objects from the store, indexed for authorization. It is
// safe for concurrent use; readers share a read lock.
type Cache struct {
	store Store
	log   *slog.Logger

	mu           sync.RWMutex
	clusterRoles map[string]*rbacv1.ClusterRole // by name
	roles        map[string]*rbacv1.Role        // by namespace/name
	bindings     map[string]*binding            // by storage key
	index        map[indexKey][]*binding
	revisions    map[string]int64 // ClusterRole name → ModRevision, for aggregation writes

	// onClusterRoles is called (outside the lock) after ClusterRoles change.
	onClusterRoles func()
}

// NewCache returns an empty cache; Start fills it.
func NewCache(store Store, log *slog.Logger) *Cache {
	if log == nil {
		log = slog.Default()
	}
	return &Cache{store: store, log: log, clusterRoles: map[string]*rbacv1.ClusterRole{}, roles: map[string]*rbacv1.Role{},
		bindings: map[string]*binding{}, index: map[indexKey][]*binding{}, revisions: map[string]int64{}}
}

// Start loads every RBAC object and then follows changes until ctx ends. It
// returns once the initial load is complete, so no request is decided on a
// partial view.
func (c *Cache) Start(ctx context.Context) error {
	if err := follow.Start(ctx, c.store, Prefix, c, c.log); err != nil {
		return fmt.Errorf("rbac: %w", err)
	}
	return nil
}

// Reset implements follow.Handler: the cache's content becomes kvs.
func (c *Cache) Reset(kvs []*storage.KeyValue) {
	c.mu.Lock()
	c.clusterRoles = map[string]*rbacv1.ClusterRole{}
	c.roles = map[string]*rbacv1.Role{}
	c.bindings = map[string]*binding{}
	c.index = map[indexKey][]*binding{}
	c.revisions = map[string]int64{}
	for _, kv := range kvs {
		c.applyLocked(kv)
	}
	c.mu.Unlock()
	c.notifyClusterRoles()
}

// Apply implements follow.Handler.
func (c *Cache) Apply(ev storage.Event) {
	c.mu.Lock()
	if ev.Type == storage.Deleted {
		c.removeLocked(ev.KV.Key)
	} else {
		c.applyLocked(ev.KV)
	}
	c.mu.Unlock()
	if strings.HasPrefix(ev.KV.Key, Prefix+clusterRoleKind+"/") {
		c.notifyClusterRoles()
	}
}

func (c *Cache) notifyClusterRoles() {
	if f := c.onClusterRoles; f != nil {
		f()
	}
}

// kindOf returns the resource part of an RBAC storage key.
func kindOf(key string) string {
	rest := strings.TrimPrefix(key, Prefix)
	kind, _, _ := strings.Cut(rest, "/")
	return kind
}

// applyLocked adds or replaces the object stored under kv.Key.
func (c *Cache) applyLocked(kv *storage.KeyValue) {
	c.removeLocked(kv.Key)
	switch kindOf(kv.Key) {
	case clusterRoleKind:
		r := &rbacv1.ClusterRole{}
		if c.decode(kv, r) {
			c.clusterRoles[r.Name] = r
			c.revisions[r.Name] = kv.ModRevision
		}
	case roleKind:
		r := &rbacv1.Role{}
		if c.decode(kv, r) {
			c.roles[r.Namespace+"/"+r.Name] = r
		}
	case clusterRoleBindingKind:
		b := &rbacv1.ClusterRoleBinding{}
		if c.decode(kv, b) {
			c.addBindingLocked(kv.Key, "", b.RoleRef, b.Subjects)
		}
	case roleBindingKind:
		b := &rbacv1.RoleBinding{}
		if c.decode(kv, b) {
			c.addBindingLocked(kv.Key, b.Namespace, b.RoleRef, b.Subjects)
		}
	}
}

func (c *Cache) decode(kv *storage.KeyValue, into any) bool {
	if err := json.Unmarshal(kv.Value, into); err != nil {
		c.log.Error("rbac: skipping undecodable object", "key", kv.Key, "err", err)
		return false
	}
	return true
}

// removeLocked forgets the object stored under key, if any.
func (c *Cache) removeLocked(key string) {
	rest := strings.TrimPrefix(key, Prefix)
	kind, id, _ := strings.Cut(rest, "/")
	switch kind {
	case clusterRoleKind:
		delete(c.clusterRoles, id)
		delete(c.revisions, id)
	case roleKind:
		delete(c.roles, id)
	case clusterRoleBindingKind, roleBindingKind:
		b := c.bindings[key]
		if b == nil {
			return
		}
		delete(c.bindings, key)
		for _, k := range b.subjects {
			list := c.index[k]
			out := list[:0:0]
			for _, x := range list {
				if x != b {
					out = append(out, x)
				}
			}
			if len(out) == 0 {
				delete(c.index, k)
			} else {
				c.index[k] = out
			}
		}
	}
}

// addBindingLocked indexes a binding under each of its subjects. Subjects
// of kinds RBAC does not know are ignored, as Kubernetes ignores them.
func (c *Cache) addBindingLocked(key, namespace string, ref rbacv1.RoleRef, subjects []rbacv1.Subject) {
	b := &binding{key: key, namespace: namespace, roleRef: ref}
	seen := map[indexKey]bool{}
	for _, s := range subjects {
		k := indexKey{namespace: namespace}
		switch s.Kind {
		case rbacv1.UserKind:
			k.kind, k.name = subjectUser, s.Name
		case rbacv1.GroupKind:
			k.kind, k.name = subjectGroup, s.Name
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = namespace // a RoleBinding's own namespace is the default
			}
			if ns == "" || s.Name == "" {
				continue
			}
			k.kind, k.name = subjectUser, ServiceAccountUsername(ns, s.Name)
		default:
			continue
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		b.subjects = append(b.subjects, k)
		c.index[k] = append(c.index[k], b)
	}
	c.bindings[key] = b
}

// ServiceAccountUsername is the user name a service account authenticates as.
func ServiceAccountUsername(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// rulesOfLocked returns the rules a binding grants; nil when the role it
// names does not exist (yet).
func (c *Cache) rulesOfLocked(b *binding) []rbacv1.PolicyRule {
	switch b.roleRef.Kind {
	case "ClusterRole":
		if r := c.clusterRoles[b.roleRef.Name]; r != nil {
			return r.Rules
		}
	case "Role":
		if b.namespace == "" {
			return nil
		}
		if r := c.roles[b.namespace+"/"+b.roleRef.Name]; r != nil {
			return r.Rules
		}
	}
	return nil
}
