package apiserver_test

import (
	"context"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

func tokenConfig(srv *apiservertest.Running, token string) *rest.Config {
	cfg := rest.AnonymousClientConfig(srv.Config)
	cfg.BearerToken = token
	return cfg
}

func TestServiceAccountTokens(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	sa, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	if tr.Status.Token == "" || *tr.Spec.ExpirationSeconds != 3600 {
		t.Fatalf("TokenRequest = %+v", tr)
	}
	robot := clientsetFor(t, tokenConfig(srv, tr.Status.Token))

	who, err := robot.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("whoami with the token: %v", err)
	}
	if u := who.Status.UserInfo; u.Username != "system:serviceaccount:default:robot" || u.UID != string(sa.UID) ||
		!strings.Contains(strings.Join(u.Groups, ","), "system:serviceaccounts:default") {
		t.Errorf("token user = %+v", u)
	}
	if _, err := robot.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("unbound service account lists pods: %v, want 403", err)
	}
	if _, err := admin.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "robot-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "robot", Namespace: "default"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAllowed(t, "bound service account lists pods", func() error {
		_, err := robot.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		return err
	})

	t.Run("TokenReview", func(t *testing.T) {
		r, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token}}, metav1.CreateOptions{})
		if err != nil || !r.Status.Authenticated || r.Status.User.Username != "system:serviceaccount:default:robot" || r.Spec.Token != "" {
			t.Errorf("TokenReview = %+v, %v", r, err)
		}
		r, err = admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{
			Token: tr.Status.Token, Audiences: []string{"vault"}}}, metav1.CreateOptions{})
		if err != nil || r.Status.Authenticated || !strings.Contains(r.Status.Error, "audience") {
			t.Errorf("TokenReview for another audience = %+v, %v", r.Status, err)
		}
	})
	t.Run("a token for another audience is refused by the API", func(t *testing.T) {
		vault, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = clientsetFor(t, tokenConfig(srv, vault.Status.Token)).CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if !apierrors.IsUnauthorized(err) || !strings.Contains(err.Error(), "audience") {
			t.Errorf("vault token: %v, want 401 naming the audience", err)
		}
	})
	t.Run("bad token requests", func(t *testing.T) {
		_, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](60)}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "less than 10 minutes") {
			t.Errorf("60s token: %v", err)
		}
		_, err = admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "nobody", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("token for a missing service account: %v", err)
		}
		_, err = admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "ghost"}}}, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("token bound to a missing pod: %v", err)
		}
		_, err = admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Node", Name: "n"}}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Errorf("token bound to a node: %v", err)
		}
	})
	t.Run("a token bound to a pod dies with the pod", func(t *testing.T) {
		pod, err := admin.CoreV1().Pods("default").Create(ctx, testPod("holder"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bound, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "holder", UID: pod.UID}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bc := clientsetFor(t, tokenConfig(srv, bound.Status.Token))
		who, err := bc.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil || strings.Join(who.Status.UserInfo.Extra["authentication.kubernetes.io/pod-name"], "") != "holder" {
			t.Fatalf("whoami with a pod-bound token = %+v, %v", who, err)
		}
		if err := admin.CoreV1().Pods("default").Delete(ctx, "holder", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		_, err = bc.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if !apierrors.IsUnauthorized(err) || !strings.Contains(err.Error(), "pod default/holder no longer exists") {
			t.Errorf("token of a deleted pod: %v, want 401", err)
		}
	})
	t.Run("a token of a deleted service account is refused", func(t *testing.T) {
		if err := admin.CoreV1().ServiceAccounts("default").Delete(ctx, "robot", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := robot.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if !apierrors.IsUnauthorized(err) || !strings.Contains(err.Error(), "serviceaccount default/robot no longer exists") {
			t.Errorf("token of a deleted service account: %v, want 401", err)
		}
		// A new account of the same name does not inherit the old tokens.
		if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err = robot.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if !apierrors.IsUnauthorized(err) || !strings.Contains(err.Error(), "recreated") {
			t.Errorf("token of a recreated service account: %v, want 401", err)
		}
	})
}
