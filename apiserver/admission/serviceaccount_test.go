package admission_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiffkube/skiff/apiserver/admission"
	"github.com/skiffkube/skiff/storage"
	"github.com/skiffkube/skiff/storage/storagetest"
)

func putServiceAccount(t *testing.T, st *storage.Store, ns, name string) {
	t.Helper()
	data, _ := json.Marshal(&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{Kind: "ServiceAccount", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
	if _, err := st.Create(context.Background(), "/registry/serviceaccounts/"+ns+"/"+name, data, 0); err != nil {
		t.Errorf("creating service account %s/%s: %v", ns, name, err)
	}
}

func podAttrs(ns, name, sa string) *admission.Attributes {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{ServiceAccountName: sa, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	return &admission.Attributes{Resource: schema.GroupResource{Resource: "pods"}, Namespace: ns, Name: name, Object: pod}
}

// TestServiceAccountAdmission: a pod is admitted only with a service
// account that exists; a missing "default" is waited for briefly (the
// service account controller creates it just after its namespace), then
// refused with Kubernetes' message.
func TestServiceAccountAdmission(t *testing.T) {
	st := storagetest.Open(t, storagetest.SQLiteEndpoint(t))
	chain := admission.New(st, nil)
	ctx := context.Background()

	putServiceAccount(t, st, "ns", "robot")
	if err := chain.Mutate(ctx, podAttrs("ns", "ok", "robot")); err != nil {
		t.Fatalf("existing service account refused: %v", err)
	}

	start := time.Now()
	err := chain.Mutate(ctx, podAttrs("ns", "early", ""))
	if !apierrors.IsForbidden(err) || err.Error() != `pods "early" is forbidden: error looking up service account ns/default: serviceaccount "default" not found` {
		t.Fatalf("missing default service account: got %v", err)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Fatalf("a missing default service account was refused after %s, want about 1-2s of retries first", waited)
	}

	start = time.Now()
	err = chain.Mutate(ctx, podAttrs("ns", "nosa", "ghost"))
	if !apierrors.IsForbidden(err) || err.Error() != `pods "nosa" is forbidden: error looking up service account ns/ghost: serviceaccount "ghost" not found` {
		t.Fatalf("missing named service account: got %v", err)
	}
	if waited := time.Since(start); waited > 500*time.Millisecond {
		t.Fatalf("a missing named service account took %s; only default is retried", waited)
	}

	// The default account appearing while the pod waits admits the pod.
	go func() {
		time.Sleep(300 * time.Millisecond)
		putServiceAccount(t, st, "ns", "default")
	}()
	a := podAttrs("ns", "late", "")
	if err := chain.Mutate(ctx, a); err != nil {
		t.Fatalf("default service account created during the wait: %v", err)
	}
	if got := a.Object.(*corev1.Pod).Spec.ServiceAccountName; got != "default" {
		t.Fatalf("serviceAccountName defaulted to %q", got)
	}

	if err := chain.Mutate(ctx, podAttrs("other", "plain", "robot")); !apierrors.IsForbidden(err) {
		t.Fatalf("an account of another namespace admitted a pod: %v", err)
	}
}

// TestServiceAccountImagePullSecrets: a pod without imagePullSecrets gets
// its service account's; a pod naming its own keeps them, as Kubernetes'
// ServiceAccount admission plugin does.
func TestServiceAccountImagePullSecrets(t *testing.T) {
	st := storagetest.Open(t, storagetest.SQLiteEndpoint(t))
	chain := admission.New(st, nil)
	ctx := context.Background()
	data, _ := json.Marshal(&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{Kind: "ServiceAccount", APIVersion: "v1"},
		ObjectMeta:       metav1.ObjectMeta{Name: "puller", Namespace: "ns"},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}, {Name: "backup"}}})
	if _, err := st.Create(ctx, "/registry/serviceaccounts/ns/puller", data, 0); err != nil {
		t.Fatal(err)
	}

	a := podAttrs("ns", "inherits", "puller")
	if err := chain.Mutate(ctx, a); err != nil {
		t.Fatal(err)
	}
	got := a.Object.(*corev1.Pod).Spec.ImagePullSecrets
	if len(got) != 2 || got[0].Name != "regcred" || got[1].Name != "backup" {
		t.Errorf("pod without imagePullSecrets got %v, want the account's [regcred backup]", got)
	}

	a = podAttrs("ns", "own", "puller")
	a.Object.(*corev1.Pod).Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "mine"}}
	if err := chain.Mutate(ctx, a); err != nil {
		t.Fatal(err)
	}
	got = a.Object.(*corev1.Pod).Spec.ImagePullSecrets
	if len(got) != 1 || got[0].Name != "mine" {
		t.Errorf("pod with its own imagePullSecrets got %v, want only [mine]", got)
	}
}
