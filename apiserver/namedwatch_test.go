package apiserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// A watch of a named object (/watch/namespaces/<ns>/secrets/<name>, or
// ?watch=true on the object's path) is authorized for that name alone, so
// it must deliver that object alone, as Kubernetes' ListResource narrows a
// named watch to metadata.name. It used to stream the whole namespace: a
// user granted get and watch on one secret (resourceNames) read every
// secret beside it, and a user whose Role in their namespace grants watch
// on namespaces watched every namespace of the cluster.
func TestNamedWatchSeesOnlyThatObject(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	teamNamespace(t, admin, "mine", "theirs")
	grantInTeam(t, admin, "one-secret", "alice", rbacv1.PolicyRule{Verbs: []string{"get", "watch"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"mine"}},
		rbacv1.PolicyRule{Verbs: []string{"get", "watch"}, APIGroups: []string{""}, Resources: []string{"namespaces"}})
	alice := identity{name: "alice", hc: httpsClient(t, srv.UserConfig(t, "alice"))}
	waitAllowed(t, "alice gets her secret", func() error {
		_, err := clientsetFor(t, srv.UserConfig(t, "alice")).CoreV1().Secrets("team").Get(ctx, "mine", metav1.GetOptions{})
		return err
	})

	// watched returns the names a watch that ends after a second delivered.
	watched := func(path string) []string {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := alice.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		var names []string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var ev struct {
				Object metav1.PartialObjectMetadata `json:"object"`
			}
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatalf("GET %s: event %q: %v", path, sc.Text(), err)
			}
			names = append(names, ev.Object.Name)
		}
		return names
	}
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/api/v1/watch/namespaces/team/secrets/mine?timeoutSeconds=1", []string{"mine"}},
		{"/api/v1/namespaces/team/secrets/mine?watch=true&timeoutSeconds=1", []string{"mine"}},
		{"/api/v1/watch/namespaces/team?timeoutSeconds=1", []string{"team"}},
	} {
		if got := watched(tc.path); !slices.Equal(got, tc.want) {
			t.Errorf("GET %s delivered %q, want %q", tc.path, got, tc.want)
		}
	}

	// A field selector naming another object does not widen the watch.
	code, body := alice.do(t, srv.URL, "GET", "/api/v1/watch/namespaces/team/secrets/mine?timeoutSeconds=1&fieldSelector=metadata.name%3Dtheirs", nil)
	if code != http.StatusBadRequest {
		t.Errorf("named watch with another name's field selector: %d %s, want 400", code, body)
	}
}

// A list or watch whose field selector is metadata.name=<name> is
// authorized as a request for that name, as Kubernetes' NewRequestInfo
// makes it: a user granted one secret by resourceNames may follow it with
// kubectl get secret <name> -w (a list and a watch with that selector),
// and sees no other; a list naming no object, or another one, and a
// deletecollection stay refused.
func TestListByNameSelectorUsesResourceNames(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	teamNamespace(t, admin, "mine", "theirs")
	grantInTeam(t, admin, "one-secret", "alice", rbacv1.PolicyRule{Verbs: []string{"get", "list", "watch", "deletecollection"}, APIGroups: []string{""},
		Resources: []string{"secrets"}, ResourceNames: []string{"mine"}})
	alice := clientsetFor(t, srv.UserConfig(t, "alice")).CoreV1().Secrets("team")
	var list *corev1.SecretList
	waitAllowed(t, "alice lists her secret by name", func() (err error) {
		list, err = alice.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=mine"})
		return err
	})
	if len(list.Items) != 1 || list.Items[0].Name != "mine" {
		t.Errorf("list by name = %d items, want mine alone", len(list.Items))
	}
	w, err := alice.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=mine", ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("watch by name: %v", err)
	}
	w.Stop()

	for what, sel := range map[string]string{"list": "", "list by another name": "metadata.name=theirs", "list by a name or more": "metadata.name!=theirs"} {
		if _, err := alice.List(ctx, metav1.ListOptions{FieldSelector: sel}); !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want Forbidden", what, err)
		}
	}
	if err := alice.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "metadata.name=mine"}); !apierrors.IsForbidden(err) {
		t.Errorf("deletecollection by name: %v, want Forbidden", err)
	}
	// The refusal names the object asked about, as Kubernetes' Forbidden
	// names the authorizer's attributes' name: kubectl get secret theirs
	// -w says secrets "theirs" is forbidden.
	_, err = alice.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=theirs"})
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Details == nil || se.ErrStatus.Details.Name != "theirs" ||
		!strings.HasPrefix(se.ErrStatus.Message, `secrets "theirs" is forbidden: User "alice" cannot list resource "secrets"`) {
		t.Errorf("list by another name: %v, want a Forbidden naming secret theirs", err)
	}
}
