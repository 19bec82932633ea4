package serviceaccount

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// Paths of the service account issuer discovery documents, as Kubernetes
// serves them (ServiceAccountIssuerDiscovery): an OpenID Connect provider
// configuration and the key set that verifies the tokens, so that a
// relying party outside the cluster can check a token without a
// TokenReview.
const (
	OpenIDConfigPath = "/.well-known/openid-configuration"
	JWKSPath         = "/openid/v1/jwks"
)

// keyID names the signing key in the tokens' "kid" header and in the key
// set: the unpadded base64url SHA-256 of the public key's PKIX encoding,
// the same naming Kubernetes uses.
func keyID(t *Tokens) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(&t.key.PublicKey)
	if err != nil {
		return "", fmt.Errorf("serviceaccount: encoding the public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// OpenIDConfiguration is the discovery document: the issuer and where its
// keys are (jwksURI).
func (t *Tokens) OpenIDConfiguration(jwksURI string) ([]byte, error) {
	return json.Marshal(struct {
		Issuer        string   `json:"issuer"`
		JWKSURI       string   `json:"jwks_uri"`
		ResponseTypes []string `json:"response_types_supported"`
		SubjectTypes  []string `json:"subject_types_supported"`
		SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
	}{t.issuer, jwksURI, []string{"id_token"}, []string{"public"}, []string{"ES256"}})
}

// JWKS is the key set (RFC 7517) with the public key that verifies the
// tokens.
func (t *Tokens) JWKS() ([]byte, error) {
	kid, err := keyID(t)
	if err != nil {
		return nil, err
	}
	pub := &t.key.PublicKey
	ek, err := pub.ECDH()
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: encoding the public key: %w", err)
	}
	// The uncompressed point is 0x04, then X and Y, each as wide as the
	// curve's field: the fixed-width coordinates a JWK holds (RFC 7518).
	point := ek.Bytes()
	size := (len(point) - 1) / 2
	b64 := base64.RawURLEncoding.EncodeToString
	type jwk struct {
		Use string `json:"use"`
		Kty string `json:"kty"`
		Kid string `json:"kid"`
		Crv string `json:"crv"`
		Alg string `json:"alg"`
		X   string `json:"x"`
		Y   string `json:"y"`
	}
	return json.Marshal(struct {
		Keys []jwk `json:"keys"`
	}{[]jwk{{Use: "sig", Kty: "EC", Kid: kid, Crv: pub.Curve.Params().Name, Alg: "ES256", X: b64(point[1 : 1+size]), Y: b64(point[1+size:])}}})
}
