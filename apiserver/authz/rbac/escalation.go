package rbac

import (
	"context"
	"fmt"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/apiserver/authz"
)

// Escalation refuses writes of roles and bindings that would grant more
// than the writer holds, as Kubernetes' RBAC storage does: a Role or
// ClusterRole may be written only by someone whose own rules cover it (or
// who may "escalate" it), a binding only by someone whose rules cover the
// role it names (or who may "bind" it). Superusers (system:masters) pass.
type Escalation struct {
	// Decide answers the escalate/bind checks (the server's whole chain).
	Decide authz.Authorizer
	// Rules lists what a user holds (RBAC).
	Rules *Authorizer
	// Superusers skip the checks.
	Superusers authz.PrivilegedGroups
}

var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// Guard is a registry WriteGuard for the four RBAC resources.
func (e *Escalation) Guard(ctx context.Context, obj, old runtime.Object) error {
	u, ok := authn.UserFrom(ctx)
	if !ok {
		return apierrors.NewUnauthorized("no user")
	}
	if allowed, _, _ := e.Superusers.Authorize(ctx, authz.Attributes{User: u}); allowed {
		return nil
	}
	// As Kubernetes: an update of only what the garbage collector and
	// finalizers need grants nothing new, so whoever may update the object
	// may make it (the garbage collector orphaning a role, a controller
	// dropping its finalizer from a binding of cluster-admin).
	if old != nil && onlyGCFields(obj, old) {
		return nil
	}
	switch o := obj.(type) {
	case *rbacv1.Role:
		return e.role(ctx, u, "roles", o.Namespace, o.Name, o.Rules, false)
	case *rbacv1.ClusterRole:
		// Removing an aggregationRule needs the same rights as setting
		// one: it would freeze the rules it gathered.
		aggregated := o.AggregationRule != nil
		if oc, ok := old.(*rbacv1.ClusterRole); ok && oc.AggregationRule != nil {
			aggregated = true
		}
		return e.role(ctx, u, "clusterroles", "", o.Name, o.Rules, aggregated)
	case *rbacv1.RoleBinding:
		return e.binding(ctx, u, "rolebindings", o.Namespace, o.Name, o.RoleRef)
	case *rbacv1.ClusterRoleBinding:
		return e.binding(ctx, u, "clusterrolebindings", "", o.Name, o.RoleRef)
	}
	return nil
}

func (e *Escalation) may(ctx context.Context, u *authn.User, verb, resource, namespace, name string) bool {
	ok, _, err := e.Decide.Authorize(ctx, authz.Attributes{User: u, Verb: verb, APIGroup: rbacv1.GroupName,
		Resource: resource, Namespace: namespace, Name: name, ResourceRequest: true})
	return ok && err == nil
}

func (e *Escalation) role(ctx context.Context, u *authn.User, resource, namespace, name string, rules []rbacv1.PolicyRule, aggregated bool) error {
	if e.may(ctx, u, "escalate", resource, namespace, name) {
		return nil
	}
	gr := schema.GroupResource{Group: rbacv1.GroupName, Resource: resource}
	held := e.Rules.RulesFor(u, namespace)
	if ok, missing := validation.Covers(held, rules); !ok {
		return apierrors.NewForbidden(gr, name, notHeld(u, missing))
	}
	if aggregated {
		// An aggregated role takes in any labelled role's rules.
		if ok, _ := validation.Covers(held, fullAuthority); !ok {
			return apierrors.NewForbidden(gr, name, fmt.Errorf("must have cluster-admin privileges to use the aggregationRule"))
		}
	}
	return nil
}

// onlyGCFields reports whether obj differs from old at most in its
// ownerReferences, finalizers and managedFields (Kubernetes'
// IsOnlyMutatingGCFields).
func onlyGCFields(obj, old runtime.Object) bool {
	oldMeta, err := meta.Accessor(old)
	if err != nil {
		return false
	}
	c := obj.DeepCopyObject()
	m, err := meta.Accessor(c)
	if err != nil {
		return false
	}
	m.SetOwnerReferences(oldMeta.GetOwnerReferences())
	m.SetFinalizers(oldMeta.GetFinalizers())
	m.SetManagedFields(oldMeta.GetManagedFields())
	m.SetSelfLink(oldMeta.GetSelfLink())
	return equality.Semantic.DeepEqual(c, old)
}

func (e *Escalation) binding(ctx context.Context, u *authn.User, resource, namespace, name string, ref rbacv1.RoleRef) error {
	gr := schema.GroupResource{Group: rbacv1.GroupName, Resource: resource}
	refResource := "clusterroles"
	if ref.Kind == "Role" {
		refResource = "roles"
	}
	// As in Kubernetes, "bind" is asked in the binding's namespace, so a
	// RoleBinding may grant it for one namespace.
	if e.may(ctx, u, "bind", refResource, namespace, ref.Name) {
		return nil
	}
	rules, ok := e.Rules.cache.roleRules(ref, namespace)
	if !ok {
		// As Kubernetes, whose binding storage returns the role lookup's
		// error: the role is not found (404).
		return apierrors.NewNotFound(schema.GroupResource{Group: rbacv1.GroupName, Resource: refResource}, ref.Name)
	}
	if ok, missing := validation.Covers(e.Rules.RulesFor(u, namespace), rules); !ok {
		return apierrors.NewForbidden(gr, name, notHeld(u, missing))
	}
	return nil
}

// notHeld words the refusal as Kubernetes does: the missing rules (one
// verb each, as validation.Covers breaks them down) merged back into one
// rule per group, resource and name, one line each, sorted, no repeats.
func notHeld(u *authn.User, missing []rbacv1.PolicyRule) error {
	lines := map[string]bool{}
	for _, r := range mergeVerbs(missing) {
		lines[compact(r)] = true
	}
	sorted := make([]string, 0, len(lines))
	for l := range lines {
		sorted = append(sorted, l)
	}
	sort.Strings(sorted)
	return fmt.Errorf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", u.Name, u.Groups, strings.Join(sorted, "\n"))
}

// mergeVerbs joins the verbs of rules naming one group, one resource and at
// most one name (Kubernetes' CompactRules); other rules are kept as they are.
func mergeVerbs(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	type key struct {
		group, resource, name string
		named                 bool
	}
	var out []rbacv1.PolicyRule
	at := map[key]int{}
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 || len(r.APIGroups) != 1 || len(r.Resources) != 1 || len(r.ResourceNames) > 1 {
			out = append(out, r)
			continue
		}
		k := key{group: r.APIGroups[0], resource: r.Resources[0], named: len(r.ResourceNames) == 1}
		if k.named {
			k.name = r.ResourceNames[0]
		}
		if i, ok := at[k]; ok {
			out[i].Verbs = append(out[i].Verbs, r.Verbs...)
			continue
		}
		at[k] = len(out)
		c := r.DeepCopy()
		out = append(out, *c)
	}
	return out
}

func compact(r rbacv1.PolicyRule) string {
	var parts []string
	add := func(k string, v []string) {
		if len(v) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", k, v))
		}
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("ResourceNames", r.ResourceNames)
	add("NonResourceURLs", r.NonResourceURLs)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}

// roleRules returns the rules of the role a roleRef names from within
// namespace ("" for ClusterRoleBindings).
func (c *Cache) roleRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	switch ref.Kind {
	case "ClusterRole":
		if r := c.clusterRoles[ref.Name]; r != nil {
			return r.Rules, true
		}
	case "Role":
		if r := c.roles[namespace+"/"+ref.Name]; r != nil {
			return r.Rules, true
		}
	}
	return nil, false
}
