package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

func TestRuleAllows(t *testing.T) {
	res := func(verb, group, resource, sub, name string) Request {
		return Request{Verb: verb, ResourceRequest: true, APIGroup: group, Resource: resource, Subresource: sub, Name: name}
	}
	path := func(verb, p string) Request { return Request{Verb: verb, Path: p} }
	podsRead := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	tests := []struct {
		name string
		rule rbacv1.PolicyRule
		req  Request
		want bool
	}{
		{"exact verb, group and resource", podsRead, res("get", "", "pods", "", "p"), true},
		{"another verb is not granted", podsRead, res("delete", "", "pods", "", "p"), false},
		{"another group is not granted", podsRead, res("get", "apps", "pods", "", "p"), false},
		{"a subresource is not granted by its parent", podsRead, res("get", "", "pods", "status", "p"), false},
		{"resource/subresource grants the subresource",
			rbacv1.PolicyRule{Verbs: []string{"update"}, APIGroups: []string{""}, Resources: []string{"pods/status"}},
			res("update", "", "pods", "status", "p"), true},
		{"resource/subresource does not grant the parent",
			rbacv1.PolicyRule{Verbs: []string{"update"}, APIGroups: []string{""}, Resources: []string{"pods/status"}},
			res("update", "", "pods", "", "p"), false},
		{"*/scale grants any resource's scale",
			rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"*/scale"}},
			res("get", "apps", "deployments", "scale", "d"), true},
		{"*/scale does not grant status",
			rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"*/scale"}},
			res("get", "apps", "deployments", "status", "d"), false},
		{"* grants subresources",
			rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			res("create", "", "pods", "eviction", "p"), true},
		{"resourceNames grant the named object",
			rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}},
			res("get", "", "configmaps", "", "a"), true},
		{"resourceNames do not grant another object",
			rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}},
			res("get", "", "configmaps", "", "b"), false},
		{"resourceNames do not grant a list",
			rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}},
			res("list", "", "configmaps", "", ""), false},
		{"a prefix of the resource is not the resource",
			rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pod"}},
			res("get", "", "pods", "", "p"), false},
		{"a resource rule does not grant a path", podsRead, path("get", "/api"), false},
		{"exact path",
			rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/version"}},
			path("get", "/version"), true},
		{"path prefix with *",
			rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/apis/*"}},
			path("get", "/apis/apps/v1"), true},
		{"path prefix does not match its parent without the slash",
			rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/apis/*"}},
			path("get", "/apis"), false},
		{"path with another verb",
			rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}},
			path("post", "/metrics"), false},
		{"a path rule does not grant resources",
			rbacv1.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
			res("get", "", "pods", "", "p"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RuleAllows(tt.req, &tt.rule); got != tt.want {
				t.Errorf("RuleAllows(%+v, %+v) = %v, want %v", tt.req, tt.rule, got, tt.want)
			}
		})
	}
}
