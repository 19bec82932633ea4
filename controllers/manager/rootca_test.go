package manager

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/controllers/rootcacert"
)

// Against a real API server, set up as skiff server sets it up: the manager
// acts as system:kube-controller-manager and the root CA publisher as its
// own service account. kube-root-ca.crt appears with the server's CA in
// default and in a namespace created later, and comes back when deleted.
// The manager's own identity may not create ConfigMaps, so the publisher's
// account (bound to system:controller:root-ca-cert-publisher) wrote them.
func TestRootCAPublisherAgainstAPIServer(t *testing.T) {
	r := runControllers(t, []string{rootcacert.Name}, func(srv *apiservertest.Running, o *Options) {
		o.RootCA = srv.Bundle.CAPEM
	})
	srv, admin, root, ctx := r.srv, r.admin, r.root, r.ctx

	waitPublished := func(ns string) {
		t.Helper()
		var (
			cm     *corev1.ConfigMap
			getErr error
		)
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			cm, getErr = admin.CoreV1().ConfigMaps(ns).Get(ctx, rootcacert.ConfigMapName, metav1.GetOptions{})
			return getErr == nil, nil
		}); err != nil {
			t.Fatalf("%s/%s never appeared: %v", ns, rootcacert.ConfigMapName, getErr)
		}
		if len(cm.Data) != 1 || cm.Data[rootcacert.CAKey] != string(srv.Bundle.CAPEM) ||
			cm.Annotations[rootcacert.DescriptionAnnotation] != rootcacert.Description {
			t.Errorf("%s/%s: data %q annotations %q, want the server's CA and the description", ns, cm.Name, cm.Data, cm.Annotations)
		}
	}
	waitPublished("default")
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPublished("team")
	if err := admin.CoreV1().ConfigMaps("team").Delete(ctx, rootcacert.ConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPublished("team")

	account := ServiceAccounts[rootcacert.Name]
	if _, err := admin.CoreV1().ServiceAccounts(ControllerNamespace).Get(ctx, account, metav1.GetOptions{}); err != nil {
		t.Errorf("the publisher's account %s/%s: %v", ControllerNamespace, account, err)
	}
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}
	if _, err := root.CoreV1().ConfigMaps("default").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsForbidden(err) {
		t.Errorf("the manager's own identity creating a ConfigMap: %v, want 403 (then it could have been the writer)", err)
	}
}
