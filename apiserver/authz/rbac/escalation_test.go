package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/skiffkube/skiff/apiserver/authn"
)

// TestNotHeldMessage: the refusal lists the missing rights as Kubernetes'
// ConfirmNoEscalation does: Covers' one-verb rules merged back per group,
// resource and name (verbs in the order asked), one line each, sorted.
func TestNotHeldMessage(t *testing.T) {
	held := []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}
	asked := []rbacv1.PolicyRule{
		{Verbs: []string{"get", "list", "watch", "create"}, APIGroups: []string{""}, Resources: []string{"pods", "nodes", "persistentvolumes"}},
		{Verbs: []string{"get", "update"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{"web"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}},
	}
	ok, missing := validation.Covers(held, asked)
	if ok {
		t.Fatal("covered")
	}
	u := &authn.User{Name: "dana", Groups: []string{"devs", "system:authenticated"}}
	want := `user "dana" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["nodes"], Verbs:["get" "list" "watch" "create"]}
{APIGroups:[""], Resources:["persistentvolumes"], Verbs:["get" "list" "watch" "create"]}
{APIGroups:[""], Resources:["pods"], Verbs:["list" "watch" "create"]}
{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["web"], Verbs:["get" "update"]}
{NonResourceURLs:["/metrics"], Verbs:["get"]}`
	if got := notHeld(u, missing).Error(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
