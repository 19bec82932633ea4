package serviceaccount

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/storage"
)

// TestTokenBoundToNode: a TokenRequest may bind its token to a Node
// (Kubernetes' ServiceAccountTokenNodeBinding): the token names the node,
// its user carries the node's name and UID, and it authenticates only
// while that very node exists (ServiceAccountTokenNodeBindingValidation).
func TestTokenBoundToNode(t *testing.T) {
	tokens, _ := newTokens(t)
	st := tokens.store.(*storage.Store)
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-n"}}
	data, _ := json.Marshal(node)
	if _, err := st.Create(ctx, "/registry/nodes/n1", data, 0); err != nil {
		t.Fatal(err)
	}
	request := func(ref *authenticationv1.BoundObjectReference) (*authenticationv1.TokenRequest, error) {
		obj, err := tokens.createToken(ctx, "default", "robot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref}})
		if err != nil {
			return nil, err
		}
		return obj.(*authenticationv1.TokenRequest), nil
	}

	t.Run("bad references", func(t *testing.T) {
		_, err := request(&authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "n1", UID: "uid-old"})
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `nodes "n1"`) ||
			!strings.Contains(err.Error(), "the UID in the bound object reference (uid-old) does not match the UID in record") {
			t.Errorf("node reference with another uid: %v, want 409", err)
		}
		_, err = request(&authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "ghost"})
		if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `nodes "ghost" not found`) {
			t.Errorf("missing node: %v, want 404", err)
		}
		// As Kubernetes: the kind in its group, any version; else 400.
		for ref, want := range map[authenticationv1.BoundObjectReference]string{
			{Kind: "ConfigMap", APIVersion: "v1", Name: "c"}: "cannot bind token to object of type /v1, Kind=ConfigMap",
			{Kind: "Pod", APIVersion: "apps/v1", Name: "p"}:  "cannot bind token to object of type apps/v1, Kind=Pod",
		} {
			_, err = request(&ref)
			if !apierrors.IsBadRequest(err) || err.Error() != want {
				t.Errorf("reference to %s %s: %v, want 400 %q", ref.APIVersion, ref.Kind, err, want)
			}
		}
		if _, err := request(&authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v2", Name: "n1"}); err != nil {
			t.Errorf("a Node reference of another core version: %v, want it bound", err)
		}
	})

	// With the node's UID, or none (the stored node's is taken).
	var toks []string
	for _, uid := range []string{"uid-n", ""} {
		tr, err := request(&authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "n1", UID: types.UID(uid)})
		if err != nil {
			t.Fatalf("token bound to node n1 (uid %q): %v", uid, err)
		}
		toks = append(toks, tr.Status.Token)
	}
	for _, tok := range toks {
		u, ok, err := tokens.AuthenticateToken(ctx, tok)
		if !ok || err != nil {
			t.Fatalf("node-bound token: ok=%v err=%v", ok, err)
		}
		if got := u.Extra[ExtraNodeName]; len(got) != 1 || got[0] != "n1" {
			t.Errorf("node-name extra = %v, want [n1]", got)
		}
		if got := u.Extra[ExtraNodeUID]; len(got) != 1 || got[0] != "uid-n" {
			t.Errorf("node-uid extra = %v, want [uid-n]", got)
		}
		if _, ok := u.Extra[ExtraPodName]; ok {
			t.Errorf("node-bound token has pod extras: %v", u.Extra)
		}
	}
	var c claims
	if _, _, err := jwt.NewParser().ParseUnverified(toks[1], &c); err != nil {
		t.Fatal(err)
	}
	if n := c.Kubernetes.Node; n == nil || n.Name != "n1" || n.UID != "uid-n" || c.Kubernetes.Pod != nil || c.Kubernetes.Secret != nil {
		t.Errorf("kubernetes.io claim = %+v, want only node n1/uid-n bound", c.Kubernetes)
	}

	// The node is replaced by one of the same name: the token is refused.
	kv, err := st.Get(ctx, "/registry/nodes/n1", 0)
	if err != nil {
		t.Fatal(err)
	}
	node.UID = "uid-n2"
	data, _ = json.Marshal(node)
	if _, err := st.Update(ctx, "/registry/nodes/n1", data, kv.ModRevision, 0); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := tokens.AuthenticateToken(ctx, toks[0]); ok || !errors.Is(err, authn.ErrInvalidCredential) || !strings.Contains(err.Error(), "node n1 was deleted and recreated") {
		t.Errorf("token of a recreated node: ok=%v err=%v", ok, err)
	}
	kv, err = st.Get(ctx, "/registry/nodes/n1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Delete(ctx, "/registry/nodes/n1", kv.ModRevision); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := tokens.AuthenticateToken(ctx, toks[0]); ok || !errors.Is(err, authn.ErrInvalidCredential) || !strings.Contains(err.Error(), "node n1 no longer exists") {
		t.Errorf("token of a deleted node: ok=%v err=%v", ok, err)
	}
}

// TestNodeMayNotBindTokenToItself: as Kubernetes' NodeRestriction, a node
// gets only pod-bound tokens, not one bound to its own Node.
func TestNodeMayNotBindTokenToItself(t *testing.T) {
	tokens, _ := newTokens(t)
	ctx := authn.WithUser(context.Background(), &authn.User{Name: "system:node:n1", Groups: []string{"system:nodes", authn.GroupAuthenticated}})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-n"}}
	data, _ := json.Marshal(node)
	if _, err := tokens.store.(*storage.Store).Create(ctx, "/registry/nodes/n1", data, 0); err != nil {
		t.Fatal(err)
	}
	_, err := tokens.createToken(ctx, "default", "robot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "n1", UID: "uid-n"}}})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "node requested token not bound to a pod") {
		t.Errorf("node asking for a token bound to itself: %v, want 403", err)
	}
}

// TestIssueRefusesSecretWithNode: a token names one object it is bound to;
// a node beside a Secret would be read as a second binding.
func TestIssueRefusesSecretWithNode(t *testing.T) {
	tokens, sa := newTokens(t)
	_, _, err := tokens.Issue(Binding{ServiceAccount: sa, TTL: MinTTL,
		Secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", UID: "uid-s"}},
		Node:   &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-n"}}})
	if err == nil {
		t.Error("token bound to a Secret and a Node was issued")
	}
}
