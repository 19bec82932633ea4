package rbac

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/apiserver/authz"
)

// Authorizer decides requests from the cache's roles and bindings: a
// request is allowed when a ClusterRoleBinding, or a RoleBinding in the
// request's namespace, binds one of the user's identities (its name or a
// group) to a role with a rule that covers it. RBAC only allows; it never
// denies what another authorizer allowed.
type Authorizer struct {
	cache *Cache
}

// NewAuthorizer returns an authorizer over cache.
func NewAuthorizer(cache *Cache) *Authorizer { return &Authorizer{cache: cache} }

// Authorize implements authz.Authorizer. A denial has no reason, as in
// Kubernetes, so the 403 message is just "User ... cannot ...".
func (a *Authorizer) Authorize(_ context.Context, attrs authz.Attributes) (bool, string, error) {
	if attrs.User == nil {
		return false, "", nil
	}
	req := Request{
		Verb: attrs.Verb, ResourceRequest: attrs.ResourceRequest, APIGroup: attrs.APIGroup,
		Resource: attrs.Resource, Subresource: attrs.Subresource, Name: attrs.Name, Path: attrs.Path,
	}
	ns := attrs.Namespace
	if !attrs.ResourceRequest {
		ns = "" // paths are granted only by ClusterRoleBindings
	}
	allowed := false
	a.cache.visit(attrs.User, ns, func(rules []rbacv1.PolicyRule) bool {
		for i := range rules {
			if RuleAllows(req, &rules[i]) {
				allowed = true
				return false
			}
		}
		return true
	})
	return allowed, "", nil
}

// RulesFor returns every rule that applies to user in namespace: those of
// its ClusterRoleBindings and, when namespace is set, of the RoleBindings
// there (SelfSubjectRulesReview). Rules are shared with the cache: read only.
func (a *Authorizer) RulesFor(user *authn.User, namespace string) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	a.cache.visit(user, namespace, func(rules []rbacv1.PolicyRule) bool {
		out = append(out, rules...)
		return true
	})
	return out
}

// visit calls f with the rules of every binding of the user's name and
// groups, cluster-wide first and then in namespace, until f returns false.
func (c *Cache) visit(user *authn.User, namespace string, f func([]rbacv1.PolicyRule) bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	each := func(k indexKey) bool {
		for _, b := range c.index[k] {
			if rules := c.rulesOfLocked(b); len(rules) > 0 && !f(rules) {
				return false
			}
		}
		return true
	}
	scopes := [2]string{"", namespace}
	n := 1
	if namespace != "" {
		n = 2
	}
	for _, ns := range scopes[:n] {
		if !each(indexKey{kind: subjectUser, name: user.Name, namespace: ns}) {
			return
		}
		for _, g := range user.Groups {
			if !each(indexKey{kind: subjectGroup, name: g, namespace: ns}) {
				return
			}
		}
	}
}
