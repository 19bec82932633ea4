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
	role      *ruleHolder // the rules of roleRef, resolved once; nil for a bad roleRef
}

// ruleHolder holds the current rules of one (Cluster)Role name, shared by
// the role and every binding that names it, so a decision follows a
// pointer instead of looking the role up, and a role that appears or
// changes after its bindings is seen at once. It lives while the role
// exists or a binding refers to it.
type ruleHolder struct {
	rules  []rbacv1.PolicyRule
	exists bool
	refs   int
}

// holderKey names a role: namespace "" for ClusterRoles.
type holderKey struct{ namespace, name string }

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
	holders      map[holderKey]*ruleHolder
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
		bindings: map[string]*binding{}, index: map[indexKey][]*binding{}, holders: map[holderKey]*ruleHolder{}, revisions: map[string]int64{}}
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
	c.holders = map[holderKey]*ruleHolder{}
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
			c.setRulesLocked(holderKey{name: r.Name}, r.Rules)
		}
	case roleKind:
		r := &rbacv1.Role{}
		if c.decode(kv, r) {
			c.roles[r.Namespace+"/"+r.Name] = r
			c.setRulesLocked(holderKey{namespace: r.Namespace, name: r.Name}, r.Rules)
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
		if _, ok := c.clusterRoles[id]; ok {
			c.clearRulesLocked(holderKey{name: id})
		}
		delete(c.clusterRoles, id)
		delete(c.revisions, id)
	case roleKind:
		if r, ok := c.roles[id]; ok {
			c.clearRulesLocked(holderKey{namespace: r.Namespace, name: r.Name})
		}
		delete(c.roles, id)
	case clusterRoleBindingKind, roleBindingKind:
		b := c.bindings[key]
		if b == nil {
			return
		}
		delete(c.bindings, key)
		if b.role != nil {
			b.role.refs--
			c.dropIfUnusedLocked(b.roleKey())
		}
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
	if hk, ok := b.resolvable(); ok {
		b.role = c.holderLocked(hk)
		b.role.refs++
	}
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

// resolvable returns the role a binding names, if its roleRef can name one
// (a RoleBinding may name a Role in its namespace or a ClusterRole; a
// ClusterRoleBinding only a ClusterRole).
func (b *binding) resolvable() (holderKey, bool) {
	switch {
	case b.roleRef.Kind == "ClusterRole":
		return holderKey{name: b.roleRef.Name}, true
	case b.roleRef.Kind == "Role" && b.namespace != "":
		return holderKey{namespace: b.namespace, name: b.roleRef.Name}, true
	}
	return holderKey{}, false
}

func (b *binding) roleKey() holderKey {
	k, _ := b.resolvable()
	return k
}

func (c *Cache) holderLocked(k holderKey) *ruleHolder {
	h := c.holders[k]
	if h == nil {
		h = &ruleHolder{}
		c.holders[k] = h
	}
	return h
}

func (c *Cache) setRulesLocked(k holderKey, rules []rbacv1.PolicyRule) {
	h := c.holderLocked(k)
	h.rules, h.exists = rules, true
}

func (c *Cache) clearRulesLocked(k holderKey) {
	if h := c.holders[k]; h != nil {
		h.rules, h.exists = nil, false
		c.dropIfUnusedLocked(k)
	}
}

func (c *Cache) dropIfUnusedLocked(k holderKey) {
	if h := c.holders[k]; h != nil && !h.exists && h.refs <= 0 {
		delete(c.holders, k)
	}
}

// rulesOfLocked returns the rules a binding grants; nil when the role it
// names does not exist (yet).
func (c *Cache) rulesOfLocked(b *binding) []rbacv1.PolicyRule {
	if b.role == nil {
		return nil
	}
	return b.role.rules
}
