package apiserver_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// A cluster-scoped kind has no namespaced path: Kubernetes registers nodes,
// namespaces, ClusterRoles and the like only at the cluster scope, so
// /api/v1/namespaces/<ns>/nodes is a 404. Serving it would also let the
// namespace's RBAC decide about cluster-scoped objects: a user whom a Role
// grants everything in their own namespace could read, change and delete
// every node (and ClusterRole, PersistentVolume, StorageClass, ...) through
// it.
func TestClusterScopedKindsHaveNoNamespacedPath(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	teamNamespace(t, admin)
	if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grantInTeam(t, admin, "owner", "alice", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}})
	alice := clientsetFor(t, srv.UserConfig(t, "alice"))
	waitAllowed(t, "alice lists pods in team", func() error {
		_, err := alice.CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
		return err
	})

	for _, tc := range []struct{ verb, path string }{
		{"GET", "/api/v1/namespaces/team/nodes"},
		{"GET", "/api/v1/namespaces/team/nodes/n1"},
		{"DELETE", "/api/v1/namespaces/team/nodes/n1"},
		{"DELETE", "/api/v1/namespaces/team/namespaces/team"},
		{"GET", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/clusterroles"},
		{"GET", "/api/v1/namespaces/team/nodes/n1/proxy/pods"},
	} {
		for _, who := range []string{"alice", "admin"} {
			rc := admin.CoreV1().RESTClient()
			if who == "alice" {
				rc = alice.CoreV1().RESTClient()
			}
			err := rc.Verb(tc.verb).AbsPath(tc.path).Do(ctx).Error()
			if !apierrors.IsNotFound(err) {
				t.Errorf("%s %s as %s: %v, want NotFound", tc.verb, tc.path, who, err)
			}
		}
	}
	if _, err := admin.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); err != nil {
		t.Errorf("node n1 after the namespaced deletes: %v", err)
	}
	if _, err := admin.CoreV1().Namespaces().Get(ctx, "team", metav1.GetOptions{}); err != nil {
		t.Errorf("namespace team after the namespaced deletes: %v", err)
	}
}
