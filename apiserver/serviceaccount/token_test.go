package serviceaccount

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/storage/storagetest"
)

func newTokens(t *testing.T) (*Tokens, *corev1.ServiceAccount) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s := storagetest.Open(t, storagetest.SQLiteEndpoint(t))
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "default", UID: "uid-1"}}
	data, _ := json.Marshal(sa)
	if _, err := s.Create(context.Background(), "/registry/serviceaccounts/default/robot", data, 0); err != nil {
		t.Fatal(err)
	}
	tok, err := New(key, "", s)
	if err != nil {
		t.Fatal(err)
	}
	return tok, sa
}

func TestTokenExpiry(t *testing.T) {
	tokens, sa := newTokens(t)
	now := time.Now()
	tokens.now = func() time.Time { return now }
	tok, exp, err := tokens.Issue(Binding{ServiceAccount: sa, TTL: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := tokens.AuthenticateToken(context.Background(), tok); !ok || err != nil {
		t.Fatalf("fresh token: ok=%v err=%v", ok, err)
	}
	tokens.now = func() time.Time { return exp.Add(time.Second) }
	_, _, err = tokens.AuthenticateToken(context.Background(), tok)
	if !errors.Is(err, authn.ErrInvalidCredential) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired token: %v", err)
	}
}

func TestTokensFromElsewhereAreNotOurs(t *testing.T) {
	tokens, sa := newTokens(t)
	other, _ := newTokens(t)
	tok, _, err := other.Issue(Binding{ServiceAccount: sa, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// Same issuer, another key: ours by issuer, refused by signature.
	if _, ok, err := tokens.AuthenticateToken(context.Background(), tok); ok || !errors.Is(err, authn.ErrInvalidCredential) {
		t.Errorf("token signed by another key: ok=%v err=%v", ok, err)
	}
	// Not a JWT at all, or a JWT of another issuer: left to other authenticators.
	for _, tok := range []string{"plain-token", "a.b.c", "eyJhbGciOiJub25lIn0.eyJpc3MiOiJvdGhlciJ9."} {
		if _, ok, err := tokens.AuthenticateToken(context.Background(), tok); ok || err != nil {
			t.Errorf("%q: ok=%v err=%v, want not ours", tok, ok, err)
		}
	}
	// alg=none with our issuer is refused, not accepted unsigned.
	none := "eyJhbGciOiJub25lIn0.eyJpc3MiOiJodHRwczovL2t1YmVybmV0ZXMuZGVmYXVsdC5zdmMuY2x1c3Rlci5sb2NhbCJ9."
	if _, ok, err := tokens.AuthenticateToken(context.Background(), none); ok || err == nil {
		t.Errorf("alg=none token: ok=%v err=%v", ok, err)
	}
}
