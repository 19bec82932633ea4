package apiserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/apiserver/serviceaccount"
)

// TestLegacyServiceAccountTokenTracking: the API server publishes since
// when it tracks legacy tokens, and a request authenticated with the token
// a service account token Secret holds labels that Secret with today's
// date, an ordinary write that watchers see; the Secret's other fields and
// managedFields stay.
func TestLegacyServiceAccountTokenTracking(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	today := time.Now().UTC().Format(serviceaccount.DateFormat)

	cm, err := admin.CoreV1().ConfigMaps("kube-system").Get(ctx, serviceaccount.TrackingConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("tracking ConfigMap: %v", err)
	}
	if cm.Data[serviceaccount.TrackingSinceKey] != today {
		t.Errorf("tracking ConfigMap data = %v, want since: %s", cm.Data, today)
	}

	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secret, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "builder-token", Labels: map[string]string{"team": "ci"},
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "builder"}},
		Type: corev1.SecretTypeServiceAccountToken,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// What the token Secret controller does: a token bound to the Secret, kept in it.
	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "builder", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(1) << 32),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: secret.Name, UID: secret.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte(tr.Status.Token)}
	if secret, err = admin.CoreV1().Secrets("default").Update(ctx, secret, metav1.UpdateOptions{FieldManager: "token-writer"}); err != nil {
		t.Fatal(err)
	}
	w, err := admin.CoreV1().Secrets("default").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=builder-token", ResourceVersion: secret.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	builder := clientsetFor(t, tokenConfig(srv, tr.Status.Token))
	for range 3 {
		if _, err := builder.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("request with the legacy token: %v", err)
		}
	}
	var labelled *corev1.Secret
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Modified {
			t.Fatalf("watch event %s %v, want the Secret Modified", ev.Type, ev.Object)
		}
		labelled = ev.Object.(*corev1.Secret)
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event for the last-used label")
	}
	if got := labelled.Labels[serviceaccount.LastUsedLabel]; got != today {
		t.Errorf("last-used label = %q, want %s", got, today)
	}
	if labelled.Labels["team"] != "ci" || string(labelled.Data[corev1.ServiceAccountTokenKey]) != tr.Status.Token {
		t.Errorf("the label write changed the rest of the Secret: labels %v", labelled.Labels)
	}
	if len(labelled.ManagedFields) != len(secret.ManagedFields) {
		t.Errorf("managedFields after the label write = %+v, want those before, %+v", labelled.ManagedFields, secret.ManagedFields)
	}
	got, err := admin.CoreV1().Secrets("default").Get(ctx, secret.Name, metav1.GetOptions{})
	if err != nil || got.ResourceVersion != labelled.ResourceVersion || got.ResourceVersion == secret.ResourceVersion {
		t.Errorf("Secret read back at resourceVersion %s (%v); watched %s, before %s", got.ResourceVersion, err, labelled.ResourceVersion, secret.ResourceVersion)
	}
	// Three uses on one day: one write.
	select {
	case ev := <-w.ResultChan():
		t.Errorf("a second write the same day: %s", ev.Type)
	case <-time.After(300 * time.Millisecond):
	}

	// Marked invalid (as the cleaner does), the token is refused with a 401 that says so.
	got.Labels[serviceaccount.InvalidSinceLabel] = today
	if _, err := admin.CoreV1().Secrets("default").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = builder.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if !apierrors.IsUnauthorized(err) || !strings.Contains(err.Error(), "has been marked invalid") {
		t.Errorf("request with an invalidated legacy token: %v, want 401 marked invalid", err)
	}
}

// secretBoundToken is a token of service account default/builder, valid
// for seconds and bound to secret, as the token Secret controller asks for
// the one it keeps in the Secret.
func secretBoundToken(t *testing.T, admin *kubernetes.Clientset, secret *corev1.Secret, seconds int64) string {
	t.Helper()
	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(context.Background(), "builder", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(seconds),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: secret.Name, UID: secret.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// whoami asks srv who tok authenticates as (a SelfSubjectReview) and
// returns the error, if any.
func whoami(t *testing.T, srv *apiservertest.Running, tok string) error {
	_, err := clientsetFor(t, tokenConfig(srv, tok)).AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	return err
}

// TestReplacedLegacyTokenIsRefused: as Kubernetes' legacy token validator,
// the token a service account token Secret held stops authenticating once
// the Secret holds another (clearing data.token has the token Secret
// controller write a new one), while a shorter TokenRequest token merely
// bound to that Secret lives as long as the Secret, as in Kubernetes.
func TestReplacedLegacyTokenIsRefused(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secret, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "builder-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: "builder"}},
		Type:       corev1.SecretTypeServiceAccountToken,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	issue := func(seconds int64) string { return secretBoundToken(t, admin, secret, seconds) }
	// A use of the legacy token labels its Secret in the background, so
	// the Secret is read afresh for each write.
	hold := func(tok string) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s, err := admin.CoreV1().Secrets("default").Get(ctx, secret.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			s.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte(tok)}
			_, err = admin.CoreV1().Secrets("default").Update(ctx, s, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// What the token Secret controller does: a token of the longest
	// lifetime, bound to the Secret, kept in it.
	old := issue(int64(1) << 32)
	hold(old)
	bound := issue(3600)
	for what, tok := range map[string]string{"the legacy token": old, "a token bound to its Secret": bound} {
		if err := whoami(t, srv, tok); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	renewed := issue(int64(1) << 32)
	hold(renewed)
	if err := whoami(t, srv, old); !apierrors.IsUnauthorized(err) || !strings.Contains(err.Error(), "has been replaced") {
		t.Errorf("the replaced legacy token: %v, want 401 saying it was replaced", err)
	}
	for what, tok := range map[string]string{"the new legacy token": renewed, "a token bound to its Secret": bound} {
		if err := whoami(t, srv, tok); err != nil {
			t.Errorf("%s after the Secret's token was replaced: %v", what, err)
		}
	}
}

// TestDeletedLegacyTokenSecretRefusesItsToken: as Kubernetes' legacy token
// validator, the token a service account token Secret holds stops
// authenticating as soon as the Secret is deleted, or is being deleted (a
// deletionTimestamp, the Secret held by a finalizer), with no leeway; a
// TokenRequest token merely bound to a Secret being deleted keeps the
// minute's leeway Kubernetes' bound-token validator gives it.
func TestDeletedLegacyTokenSecretRefusesItsToken(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secrets := admin.CoreV1().Secrets("default")
	// legacy creates a token Secret holding a token bound to it, as the
	// token Secret controller does, and returns that token and one merely
	// bound to the Secret.
	legacy := func(name string, finalizers ...string) (held, bound string) {
		secret, err := secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers, Annotations: map[string]string{corev1.ServiceAccountNameKey: "builder"}},
			Type:       corev1.SecretTypeServiceAccountToken,
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		held, bound = secretBoundToken(t, admin, secret, int64(1)<<32), secretBoundToken(t, admin, secret, 3600)
		secret.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte(held)}
		if _, err := secrets.Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return held, bound
	}

	gone, _ := legacy("gone-token")
	if err := whoami(t, srv, gone); err != nil {
		t.Fatalf("the legacy token: %v", err)
	}
	if err := secrets.Delete(ctx, "gone-token", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := whoami(t, srv, gone); !apierrors.IsUnauthorized(err) {
		t.Errorf("the legacy token of a deleted Secret: %v, want 401", err)
	}

	held, bound := legacy("held-token", "example.com/hold")
	if err := whoami(t, srv, held); err != nil {
		t.Fatalf("the legacy token: %v", err)
	}
	if err := secrets.Delete(ctx, "held-token", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := whoami(t, srv, held); !apierrors.IsUnauthorized(err) || !strings.Contains(err.Error(), "has been deleted") {
		t.Errorf("the legacy token of a Secret being deleted: %v, want 401 saying it was deleted", err)
	}
	if err := whoami(t, srv, bound); err != nil {
		t.Errorf("a token bound to a Secret deleted a moment ago: %v, want it served", err)
	}
}
