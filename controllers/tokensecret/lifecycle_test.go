package tokensecret

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// env is a token controller wired to a real API server, its informers started but its workers not,
// so that a test drives sync itself (or starts Run).
type env struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	c      *Controller
	ca     []byte
}

func newEnv(t *testing.T) *env { return newEnvWith(t, true) }

// newEnvWith is newEnv with, unless watchAccounts, an account informer that is never started: the
// controller's cache then knows no account, as one that has not yet seen a new account's arrival.
func newEnvWith(t *testing.T, watchAccounts bool) *env {
	t.Helper()
	srv := apiservertest.Start(t)
	client, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	accounts := factory.Core().V1().ServiceAccounts()
	if !watchAccounts {
		accounts = informers.NewSharedInformerFactory(client, 0).Core().V1().ServiceAccounts()
	}
	c, err := New(client, factory.Core().V1().Secrets(), accounts, record.NewFakeRecorder(10),
		Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RootCA: srv.Bundle.CAPEM})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return &env{t: t, ctx: ctx, client: client, c: c, ca: srv.Bundle.CAPEM}
}

// eventually waits for cond (the informer cache or the controller's loop catching up).
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			e.t.Fatalf("never: %s", what)
		}
	}
}

func (e *env) account(name string) *corev1.ServiceAccount {
	e.t.Helper()
	sa, err := e.client.CoreV1().ServiceAccounts("default").Create(e.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.eventually("account "+name+" cached", func() bool {
		got, err := e.c.accounts.ServiceAccounts("default").Get(name)
		return err == nil && got.UID == sa.UID
	})
	return sa
}

// secret creates a token Secret for account (with uid, when given) and waits for the cache to hold it.
func (e *env) secret(name, account, uid string, data map[string][]byte) *corev1.Secret {
	e.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{corev1.ServiceAccountNameKey: account}},
		Type: corev1.SecretTypeServiceAccountToken, Data: data}
	if uid != "" {
		s.Annotations[corev1.ServiceAccountUIDKey] = uid
	}
	s, err := e.client.CoreV1().Secrets("default").Create(e.ctx, s, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.eventually("secret "+name+" cached", func() bool {
		got, err := e.c.secrets.Secrets("default").Get(name)
		return err == nil && got.ResourceVersion == s.ResourceVersion
	})
	return s
}

func (e *env) get(name string) (*corev1.Secret, error) {
	return e.client.CoreV1().Secrets("default").Get(e.ctx, name, metav1.GetOptions{})
}

// As Kubernetes' token controller: a token Secret naming an account that
// does not exist, or an earlier account of that name (another uid), is
// deleted; one of the current account is filled.
func TestTokenSecretOfAMissingAccountIsDeleted(t *testing.T) {
	e := newEnv(t)
	sa := e.account("ci")
	e.secret("ghost-token", "ghost", "", nil)
	e.secret("stale-token", "ci", "uid-of-an-earlier-ci", nil)
	e.secret("ci-token", "ci", string(sa.UID), nil)
	for _, name := range []string{"ghost-token", "stale-token", "ci-token"} {
		if err := e.c.sync(e.ctx, "default/"+name); err != nil {
			t.Fatalf("sync %s: %v", name, err)
		}
	}
	for _, name := range []string{"ghost-token", "stale-token"} {
		if s, err := e.get(name); !apierrors.IsNotFound(err) {
			t.Errorf("%s: %v, %v; want it deleted", name, s, err)
		}
	}
	if s, err := e.get("ci-token"); err != nil || len(s.Data[corev1.ServiceAccountTokenKey]) == 0 {
		t.Errorf("ci-token: %v, %v; want it filled", s, err)
	}
}

// A Secret the cache sees before its account is not deleted: the account is
// read from the API before the Secret is judged orphaned.
func TestTokenSecretOfAnAccountNotYetCachedIsFilled(t *testing.T) {
	e := newEnvWith(t, false)
	s := e.secret("ci-token", "ci", "", nil)
	sa, err := e.client.CoreV1().ServiceAccounts("default").Create(e.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "ci"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.c.sync(e.ctx, "default/"+s.Name); err != nil {
		t.Fatal(err)
	}
	got, err := e.get("ci-token")
	if err != nil || len(got.Data[corev1.ServiceAccountTokenKey]) == 0 || got.Annotations[corev1.ServiceAccountUIDKey] != string(sa.UID) {
		t.Fatalf("ci-token: %v, %v; want it filled for %s", got, err, sa.UID)
	}
}

// As Kubernetes: a filled Secret whose ca.crt is not the cluster CA, or
// whose namespace is missing, gets them back; its token is kept.
func TestTokenSecretCAAndNamespaceAreRestored(t *testing.T) {
	e := newEnv(t)
	sa := e.account("ci")
	e.secret("ci-token", "ci", string(sa.UID), map[string][]byte{
		corev1.ServiceAccountTokenKey:  []byte("kept"),
		corev1.ServiceAccountRootCAKey: []byte("an old CA"),
	})
	if err := e.c.sync(e.ctx, "default/ci-token"); err != nil {
		t.Fatal(err)
	}
	got, err := e.get("ci-token")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Data[corev1.ServiceAccountRootCAKey], e.ca) || string(got.Data[corev1.ServiceAccountNamespaceKey]) != "default" ||
		string(got.Data[corev1.ServiceAccountTokenKey]) != "kept" {
		t.Errorf("data = %q", got.Data)
	}
}

// Deleting a ServiceAccount deletes its token Secrets, as Kubernetes' token
// controller does; another account's are kept.
func TestTokenSecretsGoWithTheirAccount(t *testing.T) {
	e := newEnv(t)
	ci := e.account("ci")
	other := e.account("other")
	e.secret("ci-token", "ci", string(ci.UID), nil)
	e.secret("ci-token-unmarked", "ci", "", nil)
	e.secret("other-token", "other", string(other.UID), nil)
	go e.c.Run(e.ctx, 1)
	e.eventually("tokens filled", func() bool {
		for _, name := range []string{"ci-token", "ci-token-unmarked", "other-token"} {
			if s, err := e.get(name); err != nil || len(s.Data[corev1.ServiceAccountTokenKey]) == 0 {
				return false
			}
		}
		return true
	})
	if err := e.client.CoreV1().ServiceAccounts("default").Delete(e.ctx, "ci", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("ci's token secrets deleted", func() bool {
		_, err1 := e.get("ci-token")
		_, err2 := e.get("ci-token-unmarked")
		return apierrors.IsNotFound(err1) && apierrors.IsNotFound(err2)
	})
	if _, err := e.get("other-token"); err != nil {
		t.Errorf("other-token: %v", err)
	}
}

// A deleted token Secret is taken out of its account's secrets list; other
// references stay.
func TestDeletedTokenSecretLeavesTheAccountsSecrets(t *testing.T) {
	e := newEnv(t)
	sa, err := e.client.CoreV1().ServiceAccounts("default").Create(e.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "ci"},
		Secrets: []corev1.ObjectReference{{Name: "ci-token"}, {Name: "registry"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.eventually("account cached", func() bool {
		got, err := e.c.accounts.ServiceAccounts("default").Get("ci")
		return err == nil && got.UID == sa.UID
	})
	e.secret("ci-token", "ci", string(sa.UID), nil)
	go e.c.Run(e.ctx, 1)
	if err := e.client.CoreV1().Secrets("default").Delete(e.ctx, "ci-token", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("reference removed", func() bool {
		got, err := e.client.CoreV1().ServiceAccounts("default").Get(e.ctx, "ci", metav1.GetOptions{})
		return err == nil && len(got.Secrets) == 1 && got.Secrets[0].Name == "registry"
	})
}
