package apiserver_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// A server-side apply that creates its object needs create as well as
// patch, as Kubernetes' PatchResource authorizes the create it turns into
// (withAuthorization on createValidation). It used to need patch only: a
// user allowed to patch pods, but not to create them, could run any pod.
func TestApplyThatCreatesNeedsCreate(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	teamNamespace(t, admin)
	if _, err := admin.CoreV1().ConfigMaps("team").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "old"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grant := func(name string, verbs ...string) {
		grantInTeam(t, admin, name, "alice", rbacv1.PolicyRule{Verbs: verbs, APIGroups: []string{""}, Resources: []string{"configmaps"}})
	}
	grant("patcher", "get", "patch")
	alice := clientsetFor(t, srv.UserConfig(t, "alice"))
	apply := func(name string) error {
		body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"},"data":{"k":"v"}}`
		return alice.CoreV1().RESTClient().Patch("application/apply-patch+yaml").
			Namespace("team").Resource("configmaps").Name(name).Param("fieldManager", "alice").
			Body([]byte(body)).Do(ctx).Error()
	}
	waitAllowed(t, "alice applies to an existing config map", func() error { return apply("old") })

	err := apply("new")
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `cannot create resource "configmaps"`) {
		t.Fatalf("apply creating a config map with patch only: %v, want Forbidden to create", err)
	}
	if _, err := admin.CoreV1().ConfigMaps("team").Get(ctx, "new", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("config map new after the refused apply: %v, want NotFound", err)
	}

	grant("creator", "create")
	waitAllowed(t, "alice applies a new config map once she may create", func() error { return apply("new") })
}

// An apply to a subresource never creates the object: Kubernetes' status
// storage updates only what exists (StatusREST, no create on update), so
// applying the status of a pod that does not exist is a 404, not a pod
// made of a status. It used to create the pod.
func TestApplyToStatusOfMissingObjectIsNotFound(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	body := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"ghost","namespace":"default"},"spec":{"containers":[{"name":"c","image":"x"}]},"status":{"phase":"Running"}}`
	err := admin.CoreV1().RESTClient().Patch("application/apply-patch+yaml").
		Namespace("default").Resource("pods").Name("ghost").SubResource("status").Param("fieldManager", "test").
		Body([]byte(body)).Do(ctx).Error()
	if !apierrors.IsNotFound(err) {
		t.Errorf("apply to pods/ghost/status: %v, want NotFound", err)
	}
	if _, err := admin.CoreV1().Pods("default").Get(ctx, "ghost", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod ghost after the apply to its status: %v, want NotFound", err)
	}
}
