package apiserver_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/url"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// TestServiceAccountIssuerDiscovery: as Kubernetes' ServiceAccountIssuerDiscovery,
// service accounts may read the issuer's OpenID Connect configuration and
// its key set, and a token verifies with the key its "kid" header names,
// without asking the API server; other users need a binding.
func TestServiceAccountIssuerDiscovery(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "relying"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "relying", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The token to read the documents with is the API server's.
	own, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "relying", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := rest.HTTPClientFor(&rest.Config{Host: srv.Config.Host, TLSClientConfig: rest.TLSClientConfig{CAData: srv.Config.CAData}, BearerToken: own.Status.Token})
	if err != nil {
		t.Fatal(err)
	}
	get := func(c *http.Client, u string) (*http.Response, []byte) {
		t.Helper()
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body json.RawMessage
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp, body
	}

	resp, body := get(sa, srv.Config.Host+"/.well-known/openid-configuration")
	var cfg struct {
		Issuer  string   `json:"issuer"`
		JWKSURI string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &cfg) != nil {
		t.Fatalf("openid-configuration: %d %s", resp.StatusCode, body)
	}
	host, _ := url.Parse(srv.Config.Host)
	if cfg.Issuer != "https://kubernetes.default.svc.cluster.local" || cfg.JWKSURI != "https://"+host.Host+"/openid/v1/jwks" ||
		len(cfg.Algs) != 1 || cfg.Algs[0] != "ES256" || resp.Header.Get("Cache-Control") != "public, max-age=3600" {
		t.Errorf("openid-configuration: %s (Cache-Control %q)", body, resp.Header.Get("Cache-Control"))
	}

	resp, body = get(sa, cfg.JWKSURI)
	var set struct {
		Keys []struct {
			Use, Kty, Kid, Crv, Alg, X, Y string
		} `json:"keys"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &set) != nil || len(set.Keys) != 1 {
		t.Fatalf("jwks: %d %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/jwk-set+json" {
		t.Errorf("jwks Content-Type %q", ct)
	}
	k := set.Keys[0]
	if k.Use != "sig" || k.Kty != "EC" || k.Crv != "P-256" || k.Alg != "ES256" || k.Kid == "" {
		t.Errorf("jwk: %+v", k)
	}
	coord := func(s string) *big.Int {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || len(b) != 32 {
			t.Fatalf("coordinate %q: %v (%d bytes)", s, err, len(b))
		}
		return new(big.Int).SetBytes(b)
	}
	pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: coord(k.X), Y: coord(k.Y)}
	parsed, err := jwt.Parse(tr.Status.Token, func(tok *jwt.Token) (any, error) {
		if tok.Header["kid"] != k.Kid {
			t.Errorf("token kid %v, key set's %q", tok.Header["kid"], k.Kid)
		}
		return pub, nil
	}, jwt.WithValidMethods([]string{"ES256"}), jwt.WithIssuer(cfg.Issuer), jwt.WithAudience("vault"))
	if err != nil || !parsed.Valid {
		t.Errorf("token does not verify with the published key: %v", err)
	}

	// A user without a binding may not read them.
	bob := httpsClient(t, srv.UserConfig(t, "bob"))
	if resp, body := get(bob, srv.Config.Host+"/openid/v1/jwks"); resp.StatusCode != 403 {
		t.Errorf("bob reads the key set: %d %s", resp.StatusCode, body)
	}
}
