package apiserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

func clientsetFor(t testing.TB, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// waitAllowed polls until err is no longer Forbidden: bindings reach the
// authorizer's cache through a watch.
func waitAllowed(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if !apierrors.IsForbidden(err) || time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestDefaultPolicyIsCreatedAndAggregated(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	for _, name := range []string{"cluster-admin", "admin", "edit", "view", "system:basic-user", "system:discovery",
		"system:public-info-viewer", "system:node", "system:kube-scheduler", "system:kube-controller-manager"} {
		r, err := admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("clusterrole %s: %v", name, err)
		}
		if r.Annotations[rbacv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("clusterrole %s lacks the autoupdate annotation", name)
		}
	}
	b, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, "cluster-admin", metav1.GetOptions{})
	if err != nil || len(b.Subjects) != 1 || b.Subjects[0].Name != "system:masters" {
		t.Fatalf("cluster-admin binding = %+v, %v; want system:masters", b, err)
	}
	// view ⊂ edit ⊂ admin by aggregation.
	count := func(name string) int {
		r, err := admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(r.Rules)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !(count("view") > 0 && count("edit") > count("view") && count("admin") > count("edit")) {
		if time.Now().After(deadline) {
			t.Fatalf("aggregation: view=%d edit=%d admin=%d rules", count("view"), count("edit"), count("admin"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A labelled ClusterRole extends view at once.
	_, err = admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets-view", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		r, _ := admin.RbacV1().ClusterRoles().Get(ctx, "admin", metav1.GetOptions{})
		found := false
		for _, rule := range r.Rules {
			if len(rule.Resources) == 1 && rule.Resources[0] == "widgets" {
				found = true
			}
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("widgets rule never reached admin through view and edit")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestViewInOneNamespace(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	for _, ns := range []string{"dev"} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := admin.RbacV1().RoleBindings("dev").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alice := clientsetFor(t, srv.UserConfig(t, "alice", "developers"))
	waitAllowed(t, "alice lists pods in dev", func() error {
		_, err := alice.CoreV1().Pods("dev").List(ctx, metav1.ListOptions{})
		return err
	})
	if _, err := alice.CoreV1().Namespaces().Get(ctx, "dev", metav1.GetOptions{}); err != nil {
		t.Errorf("alice gets namespace dev (view in dev covers the namespace itself): %v", err)
	}

	forbidden := []struct {
		name string
		call func() error
		msg  string
	}{
		{"list pods in another namespace", func() error { _, err := alice.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); return err },
			`pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"`},
		{"create a configmap where she may only view", func() error {
			_, err := alice.CoreV1().ConfigMaps("dev").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
			return err
		}, `configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in the namespace "dev"`},
		{"read a secret (view excludes secrets)", func() error { _, err := alice.CoreV1().Secrets("dev").Get(ctx, "s", metav1.GetOptions{}); return err },
			`secrets "s" is forbidden: User "alice" cannot get resource "secrets" in API group "" in the namespace "dev"`},
		{"list nodes", func() error { _, err := alice.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); return err },
			`nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope`},
		{"list pods across namespaces", func() error { _, err := alice.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); return err },
			`pods is forbidden: User "alice" cannot list resource "pods" in API group "" at the cluster scope`},
		{"read a role binding", func() error {
			_, err := alice.RbacV1().RoleBindings("dev").Get(ctx, "alice-view", metav1.GetOptions{})
			return err
		},
			`rolebindings.rbac.authorization.k8s.io "alice-view" is forbidden: User "alice" cannot get resource "rolebindings" in API group "rbac.authorization.k8s.io" in the namespace "dev"`},
	}
	for _, tt := range forbidden {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if !apierrors.IsForbidden(err) {
				t.Fatalf("err = %v, want 403", err)
			}
			if err.Error() != tt.msg {
				t.Errorf("message\n got %s\nwant %s", err.Error(), tt.msg)
			}
		})
	}

	t.Run("self subject access review answers can-i", func(t *testing.T) {
		for _, c := range []struct {
			verb, ns string
			want     bool
		}{{"list", "dev", true}, {"list", "default", false}, {"delete", "dev", false}} {
			r, err := alice.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: c.verb, Resource: "pods", Namespace: c.ns}},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status.Allowed != c.want {
				t.Errorf("can-i %s pods -n %s = %v, want %v", c.verb, c.ns, r.Status.Allowed, c.want)
			}
		}
	})
	t.Run("self subject rules review lists view's rules in dev only", func(t *testing.T) {
		rules := func(ns string) *authorizationv1.SelfSubjectRulesReview {
			r, err := alice.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
				Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		has := func(r *authorizationv1.SelfSubjectRulesReview, res string) bool {
			for _, rule := range r.Status.ResourceRules {
				for _, x := range rule.Resources {
					if x == res {
						return true
					}
				}
			}
			return false
		}
		if dev := rules("dev"); !has(dev, "pods") || !has(dev, "selfsubjectaccessreviews") {
			t.Errorf("rules in dev lack pods or selfsubjectaccessreviews: %+v", dev.Status.ResourceRules)
		}
		if other := rules("default"); has(other, "pods") || !has(other, "selfsubjectaccessreviews") {
			t.Errorf("rules in default: %+v", other.Status.ResourceRules)
		}
	})
	t.Run("whoami", func(t *testing.T) {
		r, err := alice.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.UserInfo.Username != "alice" || !strings.Contains(strings.Join(r.Status.UserInfo.Groups, ","), "developers") {
			t.Errorf("whoami = %+v", r.Status.UserInfo)
		}
	})
	t.Run("subject access review needs its own grant", func(t *testing.T) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice",
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Namespace: "dev"}}}
		if _, err := alice.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("alice creating a SubjectAccessReview: %v, want 403", err)
		}
		r, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil || !r.Status.Allowed {
			t.Errorf("admin's SubjectAccessReview for alice = %+v, %v; want allowed", r, err)
		}
		sar.Spec.ResourceAttributes.Namespace = "default"
		if r, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{}); err != nil || r.Status.Allowed {
			t.Errorf("SubjectAccessReview in default = %+v, %v; want denied", r, err)
		}
	})
	t.Run("impersonation needs the impersonate verb", func(t *testing.T) {
		cfg := srv.UserConfig(t, "alice")
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "bob"}
		_, err := clientsetFor(t, cfg).CoreV1().Pods("dev").List(ctx, metav1.ListOptions{})
		want := `users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Errorf("alice impersonating bob: %v\nwant %s", err, want)
		}
		asAlice := rest.CopyConfig(srv.Config)
		asAlice.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
		ac := clientsetFor(t, asAlice)
		if _, err := ac.CoreV1().Pods("dev").List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("admin as alice in dev: %v", err)
		}
		if _, err := ac.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("admin as alice in default: %v, want 403 (alice's rights, not admin's)", err)
		}
		r, err := ac.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil || r.Status.UserInfo.Username != "alice" {
			t.Errorf("whoami as alice = %+v, %v", r, err)
		}
	})
}

// TestBadCredentials: a rejected credential's 401 says why, and an
// oversized token is refused before it is looked at.
func TestBadCredentials(t *testing.T) {
	srv := apiservertest.Start(t)
	bad := newClient(t, srv)
	bad.anon = true
	resp, body := bad.do(http.MethodGet, "/api/v1/pods", "", nil, "Authorization", "Bearer not-a-token")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "unknown bearer token") {
		t.Errorf("bad token: %d %s", resp.StatusCode, body)
	}
	huge := strings.Repeat("a", 64<<10)
	resp, body = bad.do(http.MethodGet, "/api/v1/pods", "", nil, "Authorization", "Bearer "+huge)
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("oversized token: %d %s", resp.StatusCode, body)
	}
}

func TestNonResourcePathsAreAuthorized(t *testing.T) {
	srv := apiservertest.Start(t)
	alice := srv.UserConfig(t, "alice")
	rc, err := rest.RESTClientFor(withNegotiated(alice))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := rc.Get().AbsPath("/apis").Do(ctx).Error(); err != nil {
		t.Errorf("discovery for an authenticated user: %v", err)
	}
	err = rc.Get().AbsPath("/metrics").Do(ctx).Error()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "alice" cannot get path "/metrics"`) {
		t.Errorf("/metrics for alice: %v, want 403", err)
	}
}

func withNegotiated(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.GroupVersion = &corev1.SchemeGroupVersion
	cfg.APIPath = "/api"
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return cfg
}

// TestReviewBadInput: the review APIs answer malformed requests with a 4xx
// Status and serve nothing but create.
func TestReviewBadInput(t *testing.T) {
	srv := apiservertest.Start(t)
	c := newClient(t, srv)
	cases := []struct {
		method, path, body string
		code               int
	}{
		{"POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{}}`, 422},
		{"POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get"},"nonResourceAttributes":{"path":"/x","verb":"get"}}}`, 422},
		{"POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"resourceAttributes":{"verb":"get"}}}`, 422},
		{"POST", "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews", `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","spec":{"user":"u","resourceAttributes":{"verb":"get","namespace":"other"}}}`, 400},
		{"POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{}}`, 400},
		{"POST", "/apis/authentication.k8s.io/v1/tokenreviews", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{}}`, 422},
		{"POST", "/apis/authentication.k8s.io/v1/tokenreviews", `{"apiVersion":"authentication.k8s.io/v1","kind":"Pod"}`, 400},
		{"POST", "/apis/authentication.k8s.io/v1/tokenreviews", `{not json`, 400},
		{"GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "", 405},
		{"GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews/x", "", 405},
		{"DELETE", "/apis/authentication.k8s.io/v1/tokenreviews/x", "", 405},
		{"GET", "/api/v1/namespaces/default/serviceaccounts/default/token", "", 405},
	}
	for _, tc := range cases {
		var body []byte
		if tc.body != "" {
			body = []byte(tc.body)
		}
		resp, data := c.do(tc.method, tc.path, "application/json", body)
		if resp.StatusCode != tc.code || status(t, data).Code != int32(tc.code) {
			t.Errorf("%s %s %s = %d %s, want %d", tc.method, tc.path, tc.body, resp.StatusCode, data, tc.code)
		}
	}
}

// projectAdmin makes namespace "proj" with user dana its admin (the
// aggregated ClusterRole admin) and returns dana's client once her rights
// have arrived: admin's rules come through view → edit → admin
// aggregation, so it waits for the end of the chain (view's pods) as well
// as admin's own rules.
func projectAdmin(t *testing.T, srv *apiservertest.Running, admin *kubernetes.Clientset) *kubernetes.Clientset {
	t.Helper()
	ctx := context.Background()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "proj"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings("proj").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dana-admin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "dana"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dana := clientsetFor(t, srv.UserConfig(t, "dana"))
	waitAllowed(t, "dana's admin binding", func() error {
		if _, err := dana.RbacV1().RoleBindings("proj").List(ctx, metav1.ListOptions{}); err != nil {
			return err
		}
		_, err := dana.CoreV1().Pods("proj").List(ctx, metav1.ListOptions{})
		return err
	})
	return dana
}

// TestNoPrivilegeEscalation: a namespace admin may hand out what it holds,
// not more, unless granted "bind" or "escalate".
func TestNoPrivilegeEscalation(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	dana := projectAdmin(t, srv, admin)
	binding := func(name, kind, role, user string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: user}}}
	}
	role := func(name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
		return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	}
	podsGet := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	nodesList := rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"nodes"}}

	if _, err := dana.RbacV1().Roles("proj").Create(ctx, role("pod-reader", podsGet), metav1.CreateOptions{}); err != nil {
		t.Errorf("a role within dana's rights: %v", err)
	}
	if _, err := dana.RbacV1().RoleBindings("proj").Create(ctx, binding("erin-edit", "ClusterRole", "edit", "erin"), metav1.CreateOptions{}); err != nil {
		t.Errorf("binding edit, which admin covers: %v", err)
	}
	_, err := dana.RbacV1().Roles("proj").Create(ctx, role("node-lister", nodesList), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `user "dana" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:`) ||
		!strings.Contains(err.Error(), `Resources:["nodes"]`) {
		t.Errorf("a role with rights dana lacks: %v", err)
	}
	_, err = dana.RbacV1().RoleBindings("proj").Create(ctx, binding("dana-root", "ClusterRole", "cluster-admin", "dana"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not currently held") {
		t.Errorf("binding cluster-admin: %v", err)
	}
	// Updating an allowed role into an escalated one is refused too.
	r, err := dana.RbacV1().Roles("proj").Get(ctx, "pod-reader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.Rules = append(r.Rules, nodesList)
	if _, err := dana.RbacV1().Roles("proj").Update(ctx, r, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("escalating update: %v", err)
	}

	// With "bind" on cluster-admin, dana may bind it (in her namespace).
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "bind-cluster-admin"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"bind"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, ResourceNames: []string{"cluster-admin"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings("proj").Create(ctx, binding("dana-bind", "ClusterRole", "bind-cluster-admin", "dana"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAllowed(t, "dana binds cluster-admin with the bind verb", func() error {
		_, err := dana.RbacV1().RoleBindings("proj").Create(ctx, binding("dana-root", "ClusterRole", "cluster-admin", "frank"), metav1.CreateOptions{})
		return err
	})
}

// TestEscalationIgnoresGCOnlyUpdates: as Kubernetes' RBAC storage, an
// update that changes only what the garbage collector and finalizers need
// (ownerReferences, finalizers) is not checked for escalation, so the
// garbage collector can orphan a role that grants more than it holds, and a
// namespace admin can drop a finalizer from a binding of cluster-admin. Any
// other change of such an object is still refused, and an update of a
// ClusterRole that had an aggregationRule needs cluster-admin's rights even
// when it removes the rule.
func TestEscalationIgnoresGCOnlyUpdates(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	dana := projectAdmin(t, srv, admin)
	nodesList := rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"nodes"}}
	hold := "example.com/hold"
	if _, err := admin.RbacV1().Roles("proj").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "big", Finalizers: []string{hold}},
		Rules: []rbacv1.PolicyRule{nodesList}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings("proj").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "root", Finalizers: []string{hold}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "someone"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// A label is not a garbage collector's field: refused, as upstream.
	r, err := dana.RbacV1().Roles("proj").Get(ctx, "big", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labelled := r.DeepCopy()
	labelled.Labels = map[string]string{"team": "a"}
	if _, err := dana.RbacV1().Roles("proj").Update(ctx, labelled, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("labelling a role granting more than dana holds: %v, want Forbidden", err)
	}
	owned := r.DeepCopy()
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "0a1b2c3d-0000-0000-0000-000000000001"}}
	if _, err := dana.RbacV1().Roles("proj").Update(ctx, owned, metav1.UpdateOptions{}); err != nil {
		t.Errorf("setting only ownerReferences on a role granting more than dana holds: %v", err)
	}
	r, err = dana.RbacV1().Roles("proj").Get(ctx, "big", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.Finalizers, r.OwnerReferences = nil, nil
	if _, err := dana.RbacV1().Roles("proj").Update(ctx, r, metav1.UpdateOptions{}); err != nil {
		t.Errorf("dropping the finalizer and owner of a role granting more than dana holds: %v", err)
	}
	b, err := dana.RbacV1().RoleBindings("proj").Get(ctx, "root", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Finalizers = nil
	if _, err := dana.RbacV1().RoleBindings("proj").Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Errorf("dropping the finalizer of a cluster-admin binding: %v", err)
	}

	// Removing an aggregationRule needs cluster-admin's rights as setting one.
	podsGet := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gathered"},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"gather": "me"}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "erin-roles"},
		Rules: []rbacv1.PolicyRule{podsGet, {Verbs: []string{"get", "update"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "erin-roles"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "erin-roles"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "erin"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	erin := clientsetFor(t, srv.UserConfig(t, "erin"))
	waitAllowed(t, "erin's binding", func() error {
		_, err := erin.RbacV1().ClusterRoles().Get(ctx, "gathered", metav1.GetOptions{})
		return err
	})
	g, err := erin.RbacV1().ClusterRoles().Get(ctx, "gathered", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g.AggregationRule, g.Rules = nil, []rbacv1.PolicyRule{podsGet}
	_, err = erin.RbacV1().ClusterRoles().Update(ctx, g, metav1.UpdateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "must have cluster-admin privileges to use the aggregationRule") {
		t.Errorf("removing an aggregationRule without cluster-admin's rights: %v", err)
	}
}

// TestDefaultRolesForAddOns: the default cluster roles that add-ons bind
// to exist with Kubernetes' rules: a service account bound to
// system:auth-delegator (as Vault's Kubernetes auth, kube-rbac-proxy or an
// extension API server are set up) may create TokenReviews and
// SubjectAccessReviews; kube-proxy's user (system:kube-proxy) is bound to
// system:node-proxier; and system:kube-dns, system:kubelet-api-admin,
// system:node-problem-detector, system:heapster and system:kube-aggregator
// are there to bind.
func TestDefaultRolesForAddOns(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	for _, name := range []string{"system:auth-delegator", "system:node-proxier", "system:kube-dns", "system:kubelet-api-admin",
		"system:node-problem-detector", "system:heapster", "system:kube-aggregator"} {
		if _, err := admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("clusterrole %s: %v", name, err)
		}
	}
	for name, subject := range map[string]rbacv1.Subject{
		"system:node-proxier": {Kind: "User", APIGroup: rbacv1.GroupName, Name: "system:kube-proxy"},
		"system:kube-dns":     {Kind: "ServiceAccount", Name: "kube-dns", Namespace: "kube-system"},
	} {
		b, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("clusterrolebinding %s: %v", name, err)
			continue
		}
		if len(b.Subjects) != 1 || b.Subjects[0] != subject || b.RoleRef.Name != name {
			t.Errorf("clusterrolebinding %s: %+v %+v", name, b.Subjects, b.RoleRef)
		}
	}

	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "vault"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "vault-auth"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "vault", Namespace: "default"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "vault", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vault := clientsetFor(t, &rest.Config{Host: srv.Config.Host, TLSClientConfig: rest.TLSClientConfig{CAData: srv.Config.CAData}, BearerToken: tr.Status.Token})
	waitAllowed(t, "vault's TokenReview", func() error {
		r, err := vault.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token}}, metav1.CreateOptions{})
		if err == nil && (!r.Status.Authenticated || r.Status.User.Username != "system:serviceaccount:default:vault") {
			t.Errorf("review of vault's own token: %+v", r.Status)
		}
		return err
	})
	if _, err := vault.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob",
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Namespace: "default"}}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("vault's SubjectAccessReview: %v", err)
	}

	proxy := clientsetFor(t, srv.UserConfig(t, "system:kube-proxy"))
	if _, err := proxy.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("kube-proxy lists endpointslices: %v", err)
	}
	if _, err := proxy.CoreV1().Services("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("kube-proxy lists services: %v", err)
	}
}

// TestBindingAMissingRole: someone who may not "bind" a role that does not
// exist is told it is not found (404), as Kubernetes' binding storage
// returns the role lookup's error.
func TestBindingAMissingRole(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	dana := projectAdmin(t, srv, admin)
	for kind, want := range map[string]string{"Role": `roles.rbac.authorization.k8s.io "nosuch" not found`, "ClusterRole": `clusterroles.rbac.authorization.k8s.io "nosuch" not found`} {
		_, err := dana.RbacV1().RoleBindings("proj").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "to-nothing"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: "nosuch"},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "erin"}}}, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) || err.Error() != want {
			t.Errorf("binding a missing %s: %v, want NotFound %q", kind, err, want)
		}
	}
}
