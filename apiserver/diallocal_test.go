package apiserver_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// TestDialLocalServesTheAPIWithItsSecurity checks the in-memory
// connections the server's own loops use: the same API behind the same TLS
// and authentication as the TCP listener. The clients' address names a
// port nothing listens on, so a request that succeeds went in memory.
func TestDialLocalServesTheAPIWithItsSecurity(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	local := func(rc *rest.Config) *kubernetes.Clientset {
		rc = rest.CopyConfig(rc)
		rc.Host = "https://127.0.0.1:1"
		rc.Dial = srv.Server.DialLocal
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	admin := local(srv.Config)
	if _, err := admin.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		t.Fatalf("admin in memory: %v", err)
	}
	// Watches stream over it too, as the shared informers' do.
	w, err := admin.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch in memory: %v", err)
	}
	defer w.Stop()
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "seen"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := <-w.ResultChan(); ev.Object == nil {
		t.Fatalf("no watch event in memory: %+v", ev)
	}

	user := local(srv.UserConfig(t, "someone"))
	if _, err := user.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("a user without rights listed secrets in memory: %v, want Forbidden", err)
	}
	anon := local(rest.AnonymousClientConfig(srv.Config))
	if _, err := anon.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
		t.Errorf("an anonymous client listed namespaces in memory: %v", err)
	}
}
