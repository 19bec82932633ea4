package bootstrap

import (
	"context"
	"encoding/json"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/skiffkube/skiff/storage"
	"github.com/skiffkube/skiff/storage/storagetest"
)

func getRole(t *testing.T, s *storage.Store, name string) (*rbacv1.ClusterRole, int64) {
	t.Helper()
	kv, err := s.Get(context.Background(), clusterRolePrefix+name, 0)
	if err != nil {
		t.Fatalf("clusterrole %s: %v", name, err)
	}
	r := &rbacv1.ClusterRole{}
	if err := json.Unmarshal(kv.Value, r); err != nil {
		t.Fatal(err)
	}
	return r, kv.ModRevision
}

func putRole(t *testing.T, s *storage.Store, r *rbacv1.ClusterRole, rev int64) {
	t.Helper()
	data, _ := json.Marshal(r)
	if _, err := s.Update(context.Background(), clusterRolePrefix+r.Name, data, rev, 0); err != nil {
		t.Fatal(err)
	}
}

func TestReconcile(t *testing.T) {
	s := storagetest.Open(t, storagetest.SQLiteEndpoint(t))
	ctx := context.Background()
	if err := Reconcile(ctx, s); err != nil {
		t.Fatalf("first reconcile: %v", err)
	}
	for _, r := range ClusterRoles() {
		got, _ := getRole(t, s, r.Name)
		if got.UID == "" || got.CreationTimestamp.IsZero() || got.Kind != "ClusterRole" {
			t.Errorf("clusterrole %s lacks metadata: %+v", r.Name, got.ObjectMeta)
		}
	}
	rev, _ := s.Revision(ctx)
	if err := Reconcile(ctx, s); err != nil {
		t.Fatalf("second reconcile: %v", err)
	}
	if again, _ := s.Revision(ctx); again != rev {
		t.Errorf("reconciling an up-to-date policy wrote %d revisions", again-rev)
	}

	// A role still marked autoupdate=true gets its missing rule back and
	// keeps the operator's extra one.
	r, modRev := getRole(t, s, "system:basic-user")
	extra := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}
	r.Rules = []rbacv1.PolicyRule{extra}
	putRole(t, s, r, modRev)
	// A role the operator opted out keeps the operator's rules.
	d, modRev := getRole(t, s, "system:discovery")
	d.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
	d.Rules = nil
	putRole(t, s, d, modRev)
	// A deleted default comes back.
	if _, _, err := s.Delete(ctx, clusterRolePrefix+"system:monitoring", 0); err != nil {
		t.Fatal(err)
	}

	if err := Reconcile(ctx, s); err != nil {
		t.Fatalf("reconcile after edits: %v", err)
	}
	r, _ = getRole(t, s, "system:basic-user")
	var want []rbacv1.PolicyRule
	for _, def := range ClusterRoles() {
		if def.Name == "system:basic-user" {
			want = append(def.Rules, extra)
		}
	}
	// Missing rules come back broken down per resource, as Kubernetes'
	// reconciliation writes them; what matters is coverage both ways.
	if covers, missing := validation.Covers(r.Rules, want); !covers {
		t.Errorf("system:basic-user after reconcile lacks %+v", missing)
	}
	if covers, _ := validation.Covers(want, r.Rules); !covers {
		t.Errorf("system:basic-user after reconcile grants more than its rules and the operator's: %+v", r.Rules)
	}
	d, _ = getRole(t, s, "system:discovery")
	if len(d.Rules) != 0 {
		t.Errorf("opted-out system:discovery was reconciled: %+v", d.Rules)
	}
	getRole(t, s, "system:monitoring")
}
