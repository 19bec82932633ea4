package tokensecret

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// Against a real API server: a token Secret of an existing account is
// filled; its token authenticates as the account and dies with the Secret.
func TestTokenSecretIsFilledAndBoundToTheSecret(t *testing.T) {
	srv := apiservertest.Start(t)
	client, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, factory.Core().V1().Secrets(), factory.Core().V1().ServiceAccounts(), record.NewFakeRecorder(10),
		Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RootCA: srv.Bundle.CAPEM})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	go c.Run(ctx, 1)

	sa, err := client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "ci"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ci-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: "ci"}},
		Type: corev1.SecretTypeServiceAccountToken}
	if _, err := client.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var filled *corev1.Secret
	deadline := time.Now().Add(15 * time.Second)
	for {
		s, err := client.CoreV1().Secrets("default").Get(ctx, "ci-token", metav1.GetOptions{})
		if err == nil && len(s.Data[corev1.ServiceAccountTokenKey]) > 0 {
			filled = s
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("secret never filled: %+v %v", s, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if string(filled.Data[corev1.ServiceAccountNamespaceKey]) != "default" || string(filled.Data[corev1.ServiceAccountRootCAKey]) != string(srv.Bundle.CAPEM) ||
		filled.Annotations[corev1.ServiceAccountUIDKey] != string(sa.UID) {
		t.Errorf("filled secret: data keys %v, annotations %v", keys(filled.Data), filled.Annotations)
	}

	cfg := rest.AnonymousClientConfig(srv.Config)
	cfg.BearerToken = string(filled.Data[corev1.ServiceAccountTokenKey])
	tc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	who, err := tc.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || who.Status.UserInfo.Username != "system:serviceaccount:default:ci" {
		t.Fatalf("whoami with the secret's token = %+v, %v", who, err)
	}
	if err := client.CoreV1().Secrets("default").Delete(ctx, "ci-token", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = tc.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if !apierrors.IsUnauthorized(err) || !strings.Contains(err.Error(), "secret default/ci-token no longer exists") {
		t.Errorf("token of a deleted secret: %v, want 401", err)
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
