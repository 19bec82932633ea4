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

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/storage"
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
	tok, err := New(key, "", s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tok, sa
}

// TestTokenExpiry: a token is good from its issue to its expiry with a
// minute's leeway either side, as Kubernetes' validator (go-jose's
// DefaultLeeway) allows for clocks that differ: another API server whose
// clock is a little behind the issuer's accepts a token at once.
func TestTokenExpiry(t *testing.T) {
	tokens, sa := newTokens(t)
	now := time.Now()
	tokens.now = func() time.Time { return now }
	tok, exp, err := tokens.Issue(Binding{ServiceAccount: sa, TTL: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		at   time.Time
		bad  string // "" when the token must authenticate
	}{
		{"fresh", now, ""},
		{"on a clock 30s behind the issuer's", now.Add(-30 * time.Second), ""},
		{"30s after its expiry", exp.Add(30 * time.Second), ""},
		{"on a clock 2m behind the issuer's", now.Add(-2 * time.Minute), "not valid yet"},
		{"61s after its expiry", exp.Add(61 * time.Second), "expired"},
	} {
		tokens.now = func() time.Time { return tc.at }
		_, ok, err := tokens.AuthenticateToken(context.Background(), tok)
		if tc.bad == "" && (!ok || err != nil) {
			t.Errorf("%s: ok=%v err=%v", tc.name, ok, err)
		}
		if tc.bad != "" && (!errors.Is(err, authn.ErrInvalidCredential) || !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.bad)
		}
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

// TestTokenUsageCounters: each authenticated token counts once as valid,
// stale (an extended token used after its warnafter time) or legacy (kept
// in a service account token Secret), as Kubernetes'
// serviceaccount_*_tokens_total.
func TestTokenUsageCounters(t *testing.T) {
	tokens, sa := newTokens(t)
	now := time.Now()
	tokens.now = func() time.Time { return now }
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "robot-token", Namespace: "default", UID: "uid-s"}, Type: corev1.SecretTypeServiceAccountToken}
	issue := func(b Binding) string {
		t.Helper()
		tok, _, err := tokens.Issue(b)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	plain := issue(Binding{ServiceAccount: sa, TTL: time.Hour})
	extended := issue(Binding{ServiceAccount: sa, TTL: ExtendedTTL, WarnAfter: time.Hour})
	legacy := issue(Binding{ServiceAccount: sa, Secret: secret, TTL: ExtendedTTL})
	// A token bound to the Secret but not kept in it is no legacy token.
	bound := issue(Binding{ServiceAccount: sa, Secret: secret, TTL: time.Hour})
	secret.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte(legacy)}
	data, _ := json.Marshal(secret)
	if _, err := tokens.store.(*storage.Store).Create(context.Background(), "/registry/secrets/default/robot-token", data, 0); err != nil {
		t.Fatal(err)
	}
	use := func(toks ...string) {
		t.Helper()
		for _, tok := range toks {
			if _, ok, err := tokens.AuthenticateToken(context.Background(), tok); !ok || err != nil {
				t.Fatalf("token refused: %v", err)
			}
		}
	}
	use(plain, extended, legacy, bound)
	now = now.Add(2 * time.Hour)
	use(extended)
	tokens.tracker.wg.Wait()
	for name, c := range map[string]prometheus.Counter{"valid": tokens.used.valid, "stale": tokens.used.stale, "legacy": tokens.used.legacy} {
		m := &dto.Metric{}
		if err := c.Write(m); err != nil {
			t.Fatal(err)
		}
		want := map[string]float64{"valid": 3, "stale": 1, "legacy": 1}[name]
		if got := m.GetCounter().GetValue(); got != want {
			t.Errorf("%s tokens counted %v, want %v", name, got, want)
		}
	}
}

// TestTokensOfDeletedObjectsEnd: a token stops authenticating a minute after
// the deletion of its service account, or of the pod, Secret or Node it is
// bound to, began, even while a finalizer or grace period keeps the object, as
// Kubernetes' token validation.
func TestTokensOfDeletedObjectsEnd(t *testing.T) {
	tokens, sa := newTokens(t)
	now := time.Now()
	tokens.now = func() time.Time { return now }
	st := tokens.store.(*storage.Store)
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-p"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "robot-token", Namespace: "default", UID: "uid-s"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-n"}}
	for key, obj := range map[string]any{"/registry/pods/default/web": pod, "/registry/secrets/default/robot-token": secret, "/registry/nodes/n1": node} {
		data, _ := json.Marshal(obj)
		if _, err := st.Create(ctx, key, data, 0); err != nil {
			t.Fatal(err)
		}
	}
	issue := func(b Binding) string {
		t.Helper()
		b.ServiceAccount, b.TTL = sa, time.Hour
		tok, _, err := tokens.Issue(b)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	for _, tc := range []struct {
		name, key string
		obj       metav1.Object
		token     string
	}{
		{"pod", "/registry/pods/default/web", pod, issue(Binding{Pod: pod})},
		{"secret", "/registry/secrets/default/robot-token", secret, issue(Binding{Secret: secret})},
		{"node", "/registry/nodes/n1", node, issue(Binding{Node: node})},
		{"service account", "/registry/serviceaccounts/default/robot", sa, issue(Binding{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kv, err := st.Get(ctx, tc.key, 0)
			if err != nil {
				t.Fatal(err)
			}
			tc.obj.SetDeletionTimestamp(&metav1.Time{Time: now})
			data, _ := json.Marshal(tc.obj)
			if _, err := st.Update(ctx, tc.key, data, kv.ModRevision, 0); err != nil {
				t.Fatal(err)
			}
			if _, ok, err := tokens.AuthenticateToken(ctx, tc.token); !ok || err != nil {
				t.Fatalf("just after the deletion began: ok=%v err=%v", ok, err)
			}
			later := now
			now = now.Add(61 * time.Second)
			defer func() { now = later }()
			if _, _, err := tokens.AuthenticateToken(ctx, tc.token); !errors.Is(err, authn.ErrInvalidCredential) || !strings.Contains(err.Error(), "has been deleted") {
				t.Fatalf("a minute after the deletion began: %v", err)
			}
		})
	}
}
