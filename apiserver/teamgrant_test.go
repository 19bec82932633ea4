package apiserver_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// teamNamespace creates namespace "team", where the authorization tests
// grant a user their rights, with an empty Secret of each name given.
func teamNamespace(t *testing.T, admin kubernetes.Interface, secrets ...string) {
	t.Helper()
	ctx := context.Background()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range secrets {
		if _, err := admin.CoreV1().Secrets("team").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// grantInTeam grants user the rules in namespace team, by a Role and a
// RoleBinding both called name. The grant reaches the authorizer through
// a watch: callers wait for it with waitAllowed.
func grantInTeam(t *testing.T, admin kubernetes.Interface, name, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	if _, err := admin.RbacV1().Roles("team").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings("team").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
