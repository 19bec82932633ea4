package rbac

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/apiserver/authz"
	"github.com/skiffkube/skiff/storage"
	"github.com/skiffkube/skiff/storage/storagetest"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// put writes an RBAC object under its storage key.
func put(t testing.TB, s *storage.Store, obj any) {
	t.Helper()
	var key string
	switch o := obj.(type) {
	case *rbacv1.ClusterRole:
		key = Prefix + "clusterroles/" + o.Name
	case *rbacv1.Role:
		key = Prefix + "roles/" + o.Namespace + "/" + o.Name
	case *rbacv1.ClusterRoleBinding:
		key = Prefix + "clusterrolebindings/" + o.Name
	case *rbacv1.RoleBinding:
		key = Prefix + "rolebindings/" + o.Namespace + "/" + o.Name
	}
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if kv, err := s.Get(ctx, key, 0); err == nil {
		_, err = s.Update(ctx, key, data, kv.ModRevision, 0)
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := s.Create(ctx, key, data, 0); err != nil {
		t.Fatal(err)
	}
}

func startCache(t testing.TB) (*storage.Store, *Cache, *Authorizer) {
	t.Helper()
	s := storagetest.Open(t, storagetest.SQLiteEndpoint(t))
	c := NewCache(s, quietLog())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return s, c, NewAuthorizer(c)
}

// eventually polls cond until it holds (the cache follows the store by watch).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func allowed(a *Authorizer, u *authn.User, verb, group, resource, sub, ns, name string) bool {
	ok, _, _ := a.Authorize(context.Background(), authz.Attributes{User: u, Verb: verb, APIGroup: group,
		Resource: resource, Subresource: sub, Namespace: ns, Name: name, ResourceRequest: true})
	return ok
}

var podReader = &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
	Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}

func TestBindingsBySubject(t *testing.T) {
	s, _, a := startCache(t)
	put(t, s, podReader)
	put(t, s, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cm-writer", Namespace: "dev"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}})
	put(t, s, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-reads", Namespace: "dev"},
		RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "pod-reader"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}})
	put(t, s, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "team-writes", Namespace: "dev"},
		RoleRef:  rbacv1.RoleRef{Kind: "Role", Name: "cm-writer"},
		Subjects: []rbacv1.Subject{{Kind: "Group", Name: "team"}, {Kind: "ServiceAccount", Name: "builder"}}})
	put(t, s, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ops-reads"},
		RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "pod-reader"},
		Subjects: []rbacv1.Subject{{Kind: "Group", Name: "ops"}}})

	alice := &authn.User{Name: "alice", Groups: []string{"system:authenticated"}}
	bob := &authn.User{Name: "bob", Groups: []string{"team", "system:authenticated"}}
	builder := &authn.User{Name: "system:serviceaccount:dev:builder", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:dev"}}
	otherBuilder := &authn.User{Name: "system:serviceaccount:prod:builder"}
	olga := &authn.User{Name: "olga", Groups: []string{"ops"}}
	eventually(t, "bindings in the cache", func() bool { return allowed(a, olga, "list", "", "pods", "", "", "") })

	tests := []struct {
		name                             string
		u                                *authn.User
		verb, resource, sub, ns, objName string
		want                             bool
	}{
		{"cluster role bound in a namespace grants there", alice, "list", "pods", "", "dev", "", true},
		{"cluster role bound in a namespace grants nothing elsewhere", alice, "list", "pods", "", "prod", "", false},
		{"cluster role bound in a namespace grants nothing cluster-wide", alice, "list", "pods", "", "", "", false},
		{"a verb the role lacks", alice, "delete", "pods", "", "dev", "x", false},
		{"a subresource the role lacks", alice, "get", "pods", "log", "dev", "x", false},
		{"group subject", bob, "create", "configmaps", "", "dev", "", true},
		{"group subject elsewhere", bob, "create", "configmaps", "", "prod", "", false},
		{"service account subject defaults to the binding's namespace", builder, "create", "configmaps", "", "dev", "", true},
		{"a service account of the same name in another namespace", otherBuilder, "create", "configmaps", "", "dev", "", false},
		{"cluster role binding grants everywhere", olga, "get", "pods", "", "anything", "p", true},
		{"cluster role binding grants cluster-wide", olga, "list", "pods", "", "", "", true},
		{"nobody", &authn.User{Name: "eve"}, "list", "pods", "", "dev", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := allowed(a, tt.u, tt.verb, "", tt.resource, tt.sub, tt.ns, tt.objName); got != tt.want {
				t.Errorf("%s %s/%s in %q: allowed=%v, want %v", tt.u.Name, tt.resource, tt.sub, tt.ns, got, tt.want)
			}
		})
	}

	t.Run("a deleted binding stops granting", func(t *testing.T) {
		if _, _, err := s.Delete(context.Background(), Prefix+"rolebindings/dev/alice-reads", 0); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the deletion", func() bool { return !allowed(a, alice, "list", "", "pods", "", "dev", "") })
	})
	t.Run("a binding to a role that does not exist grants nothing until it exists", func(t *testing.T) {
		put(t, s, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "late"},
			RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "late-role"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "lena"}}})
		lena := &authn.User{Name: "lena"}
		time.Sleep(50 * time.Millisecond)
		if allowed(a, lena, "get", "", "secrets", "", "x", "s") {
			t.Fatal("granted through a missing role")
		}
		put(t, s, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "late-role"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}})
		eventually(t, "the role", func() bool { return allowed(a, lena, "get", "", "secrets", "", "x", "s") })
	})
	t.Run("a deleted role stops granting, and a recreated one grants again", func(t *testing.T) {
		if _, _, err := s.Delete(context.Background(), Prefix+"roles/dev/cm-writer", 0); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the role's deletion", func() bool { return !allowed(a, bob, "create", "", "configmaps", "", "dev", "") })
		put(t, s, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cm-writer", Namespace: "dev"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"create", "delete"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}})
		eventually(t, "the recreated role", func() bool { return allowed(a, bob, "delete", "", "configmaps", "", "dev", "c") })
	})
	t.Run("RulesFor lists the rules of cluster and namespace bindings", func(t *testing.T) {
		if got := len(a.RulesFor(bob, "dev")); got != 1 {
			t.Errorf("bob has %d rules in dev, want 1", got)
		}
		if got := len(a.RulesFor(bob, "prod")); got != 0 {
			t.Errorf("bob has %d rules in prod, want 0", got)
		}
	})
}

func TestAggregation(t *testing.T) {
	s, c, _ := startCache(t)
	agg := NewAggregator(c, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go agg.Run(ctx)
	put(t, s, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"agg": "mon"}}}}})
	put(t, s, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "b-part", Labels: map[string]string{"agg": "mon"}},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}})
	put(t, s, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "a-part", Labels: map[string]string{"agg": "mon"}},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"nodes"}},
			{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}})
	put(t, s, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Labels: map[string]string{"agg": "other"}},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}})
	rules := func() []rbacv1.PolicyRule {
		kv, err := s.Get(context.Background(), Prefix+"clusterroles/monitoring", 0)
		if err != nil {
			t.Fatal(err)
		}
		r := &rbacv1.ClusterRole{}
		if err := json.Unmarshal(kv.Value, r); err != nil {
			t.Fatal(err)
		}
		return r.Rules
	}
	eventually(t, "aggregated rules", func() bool { return len(rules()) == 2 })
	if got := fmt.Sprint(rules()); got != fmt.Sprint([]rbacv1.PolicyRule{
		{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"nodes"}},
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}) {
		t.Errorf("aggregated rules = %s; want a-part's two rules in name order, no duplicate", got)
	}
	// Removing the label takes the role's rules out again.
	put(t, s, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "a-part"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"nodes"}}}})
	eventually(t, "rules after a label is removed", func() bool { return len(rules()) == 1 })
}

// BenchmarkAuthorize compares a request decided by a non-admin user's 50
// RoleBindings (the matching one last) with the same request by a user
// whose single ClusterRoleBinding grants everything.
func BenchmarkAuthorize(b *testing.B) {
	s, _, a := startCache(b)
	put(b, s, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "all"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}})
	put(b, s, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "root"},
		RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "all"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "root"}}})
	put(b, s, podReader)
	for i := 0; i < 50; i++ {
		put(b, s, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%d", i), Namespace: "work"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{"apps"}, Resources: []string{fmt.Sprintf("things%d", i)}}}})
		ref := rbacv1.RoleRef{Kind: "Role", Name: fmt.Sprintf("r%d", i)}
		if i == 49 {
			ref = rbacv1.RoleRef{Kind: "ClusterRole", Name: "pod-reader"}
		}
		put(b, s, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("b%d", i), Namespace: "work"},
			RoleRef: ref, Subjects: []rbacv1.Subject{{Kind: "Group", Name: fmt.Sprintf("g%d", i)}, {Kind: "User", Name: "worker"}}})
	}
	var groups []string
	for i := 0; i < 50; i++ {
		groups = append(groups, fmt.Sprintf("g%d", i))
	}
	worker := &authn.User{Name: "worker", Groups: append(groups, "system:authenticated")}
	root := &authn.User{Name: "root", Groups: []string{"system:authenticated"}}
	deadline := time.Now().Add(5 * time.Second)
	for !allowed(a, worker, "list", "", "pods", "", "work", "") {
		if time.Now().After(deadline) {
			b.Fatal("bindings never reached the cache")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, c := range []struct {
		name string
		u    *authn.User
	}{{"cluster-wide-grant", root}, {"non-admin-50-bindings", worker}} {
		b.Run(c.name, func(b *testing.B) {
			attrs := authz.Attributes{User: c.u, Verb: "list", Resource: "pods", Namespace: "work", ResourceRequest: true}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if ok, _, _ := a.Authorize(context.Background(), attrs); !ok {
						b.Fatal("denied")
					}
				}
			})
		})
	}
}
