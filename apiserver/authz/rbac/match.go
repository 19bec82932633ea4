package rbac

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Request is what a rule is matched against. Resource requests carry a
// group, resource, optional subresource and name; non-resource requests a
// path. Verb is the Kubernetes verb (get, list, create, ...) or, for paths,
// the lower-case HTTP method.
type Request struct {
	Verb            string
	ResourceRequest bool
	APIGroup        string
	Resource        string
	Subresource     string
	Name            string
	Path            string
}

// RuleAllows reports whether one policy rule grants the request, with the
// semantics of Kubernetes' RBAC authorizer.
func RuleAllows(req Request, rule *rbacv1.PolicyRule) bool {
	if !verbMatches(rule, req.Verb) {
		return false
	}
	if !req.ResourceRequest {
		return nonResourceURLMatches(rule, req.Path)
	}
	return apiGroupMatches(rule, req.APIGroup) &&
		resourceMatches(rule, req.Resource, req.Subresource) &&
		resourceNameMatches(rule, req.Name)
}

func verbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

func apiGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

// resourceMatches accepts "*", the exact resource ("pods"), the exact
// resource/subresource pair ("pods/status") and "*/<subresource>" for a
// subresource of any resource ("*/scale"). A rule naming only "pods" does
// not grant "pods/status".
func resourceMatches(rule *rbacv1.PolicyRule, resource, subresource string) bool {
	for _, r := range rule.Resources {
		switch {
		case r == rbacv1.ResourceAll:
			return true
		case subresource == "":
			if r == resource {
				return true
			}
		case len(r) == len(resource)+1+len(subresource) &&
			strings.HasPrefix(r, resource) && r[len(resource)] == '/' && strings.HasSuffix(r, subresource):
			return true
		case len(r) == len(subresource)+2 && strings.HasPrefix(r, "*/") && strings.HasSuffix(r, subresource):
			return true
		}
	}
	return false
}

// resourceNameMatches: a rule without resourceNames covers every name; a
// rule with them covers only requests that name one of them (so never a
// list or a create, which carry no name).
func resourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	if len(rule.ResourceNames) == 0 {
		return true
	}
	for _, n := range rule.ResourceNames {
		if n == name {
			return true
		}
	}
	return false
}

// nonResourceURLMatches accepts "*", the exact path, and a prefix written
// with a trailing "*" ("/healthz/*").
func nonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		switch {
		case u == rbacv1.NonResourceAll, u == path:
			return true
		case strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimSuffix(u, "*")):
			return true
		}
	}
	return false
}
