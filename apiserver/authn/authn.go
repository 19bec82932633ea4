package authn

import (
	"time"

	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"k8s.io/utils/lru"
	"net/http"
	"os"
	"strings"
)

// Well-known group names, as in Kubernetes.
const (
	GroupAuthenticated = "system:authenticated"
	GroupMasters       = "system:masters"
	UserAnonymous      = "system:anonymous"
	GroupUnauthed      = "system:unauthenticated"
)

// User is an authenticated identity.
type User struct {
	Name   string
	UID    string
	Groups []string
	// Extra is additional information an authenticator or impersonation
	// attached (a service account token's pod name, for instance).
	Extra map[string][]string
	// Audiences are those of the audiences asked for (WithAudiences) the
	// token is good for, as a TokenReview reports them; empty when none
	// were asked for, or the credential is not a token.
	Audiences []string
}

// TokenAuthenticator checks a bearer token alone (TokenReview uses it).
// ok is false when the token is not one this authenticator issues; err is
// set when it is one but invalid (expired, revoked, wrong audience).
type TokenAuthenticator interface {
	AuthenticateToken(ctx context.Context, token string) (u *User, ok bool, err error)
}

// BearerToken returns the request's bearer token, if any, read as
// Kubernetes' bearertoken authenticator reads it: the header, trimmed, is
// split at single spaces into at most three parts; the first must be
// "bearer" in any case and the second is the token, whatever follows it.
// So "Bearer t extra" carries t, and "Bearer  t" (two spaces) carries none.
func BearerToken(r *http.Request) (string, bool) {
	tok, _ := parseBearer(r.Header.Get("Authorization"))
	return tok, tok != ""
}

// ExtraSpaceWarning is Kubernetes' warning for an Authorization header with
// more than one space before its bearer token, which is then ignored.
const ExtraSpaceWarning = "the provided Authorization header contains extra space before the bearer token, and is ignored"

// parseBearer is BearerToken's reading of an Authorization header;
// extraSpace reports an empty token followed by more (the header had two
// spaces after the scheme).
func parseBearer(h string) (tok string, extraSpace bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return "", false
	}
	parts := strings.SplitN(h, " ", 3)
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") {
		return "", false
	}
	return parts[1], parts[1] == "" && len(parts) == 3
}

// BearerTokens authenticates requests by their bearer token with a list of
// token authenticators; the first that recognises the token decides. A
// token nobody recognises is an invalid credential (401), not anonymous.
type BearerTokens []TokenAuthenticator

// Authenticate implements Authenticator. A header with an empty token is
// no credential; one with extra space before its token gets Kubernetes'
// warning (AddWarning).
func (b BearerTokens) Authenticate(r *http.Request) (*User, bool, error) {
	tok, extraSpace := parseBearer(r.Header.Get("Authorization"))
	if tok == "" {
		if extraSpace {
			AddWarning(r.Context(), ExtraSpaceWarning)
		}
		return nil, false, nil
	}
	return b.AuthenticateToken(r.Context(), tok)
}

// AuthenticateToken implements TokenAuthenticator.
func (b BearerTokens) AuthenticateToken(ctx context.Context, tok string) (*User, bool, error) {
	if len(tok) > MaxTokenBytes {
		return nil, false, fmt.Errorf("%w: bearer token is longer than %d bytes", ErrInvalidCredential, MaxTokenBytes)
	}
	for _, a := range b {
		u, ok, err := a.AuthenticateToken(ctx, tok)
		if err != nil || ok {
			return u, ok, err
		}
	}
	return nil, false, fmt.Errorf("%w: unknown bearer token", ErrInvalidCredential)
}

type warningsKey struct{}

// WithWarnings returns a context in which authenticators record warnings
// for the response (as Kubernetes' warning.AddWarning), and the list they
// are recorded in.
func WithWarnings(ctx context.Context) (context.Context, *[]string) {
	w := new([]string)
	return context.WithValue(ctx, warningsKey{}, w), w
}

// AddWarning records a warning for the response, where the context was
// made by WithWarnings; elsewhere it is dropped.
func AddWarning(ctx context.Context, text string) {
	if w, ok := ctx.Value(warningsKey{}).(*[]string); ok {
		*w = append(*w, text)
	}
}

// MaxTokenBytes bounds the bearer tokens looked at: no real token comes
// near it, and an oversized one is refused before any parsing or hashing.
const MaxTokenBytes = 16 << 10

// Authenticator finds the user of a request. ok is false when the request
// carries no credential this authenticator understands; err is set when it
// carries one that is invalid.
type Authenticator interface {
	Authenticate(r *http.Request) (u *User, ok bool, err error)
}

// ErrInvalidCredential is returned for a presented but unusable credential.
var ErrInvalidCredential = errors.New("authn: invalid credential")

type userKey struct{}

// WithUser stores the user in a context.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user stored by WithUser.
func UserFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(userKey{}).(*User)
	return u, ok && u != nil
}

// Union tries each authenticator in order, as Kubernetes' union
// authenticator (union.New, which kube-apiserver uses): the first that
// authenticates the request decides, even after another found its
// credential invalid, so an expired client certificate sent with a valid
// bearer token authenticates by the token. Only when none succeeds are the
// failures returned, all of them, as one error.
type Union []Authenticator

// Authenticate implements Authenticator.
func (us Union) Authenticate(r *http.Request) (*User, bool, error) {
	var errs []error
	for _, a := range us {
		u, ok, err := a.Authenticate(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return u, true, nil
		}
	}
	switch len(errs) {
	case 0:
		return nil, false, nil
	case 1:
		return nil, false, errs[0]
	}
	return nil, false, unionError(errs)
}

// unionError is the failures of several authenticators: errors.Is sees
// each, and the message says why each credential failed.
type unionError []error

func (e unionError) Error() string {
	prefix := ErrInvalidCredential.Error() + ": "
	var b strings.Builder
	b.WriteString(prefix)
	for i, err := range e {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(strings.TrimPrefix(err.Error(), prefix))
	}
	return b.String()
}

func (e unionError) Unwrap() []error { return e }

// ClientCert authenticates TLS client certificates that chain to Roots.
type ClientCert struct {
	Roots *x509.CertPool
	// verified remembers chains that verified, so that a client sending
	// many requests pays for the signature checks once (they were most of
	// a busy server's authentication time). Nil verifies every time.
	verified *lru.Cache
}

// verifiedChain is a cached successful verification.
type verifiedChain struct {
	user  *User
	until time.Time // the chain's earliest expiry: verify again after it
}

// verifiedChains is how many verified chains a ClientCert remembers. Every
// node agent has a certificate of its own, so the cache must hold a whole
// cluster's nodes and the other clients besides: with 4,096 entries, 5,000
// hollow nodes renewing their Leases cycled through the LRU and every
// request verified its chain again (3.7% of the server's CPU). An entry is
// a few hundred bytes and exists only for a certificate that was seen.
const verifiedChains = 32768

// NewClientCert returns a client certificate authenticator for roots that
// caches up to verifiedChains verified chains.
func NewClientCert(roots *x509.CertPool) ClientCert {
	return ClientCert{Roots: roots, verified: lru.New(verifiedChains)}
}

// Authenticate implements Authenticator.
func (c ClientCert) Authenticate(r *http.Request) (*User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 || c.Roots == nil {
		return nil, false, nil
	}
	var key [32]byte
	if c.verified != nil {
		h := sha256.New()
		for _, cert := range r.TLS.PeerCertificates {
			h.Write(cert.Raw)
		}
		h.Sum(key[:0])
		if v, ok := c.verified.Get(key); ok {
			if vc := v.(verifiedChain); time.Now().Before(vc.until) {
				u := *vc.user // each request gets its own copy to change
				u.Groups = append([]string{}, vc.user.Groups...)
				return &u, true, nil
			}
			c.verified.Remove(key)
		}
	}
	leaf := r.TLS.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, ic := range r.TLS.PeerCertificates[1:] {
		inter.AddCert(ic)
	}
	chains, err := leaf.Verify(x509.VerifyOptions{
		Roots: c.Roots, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, false, fmt.Errorf("%w: client certificate: %v", ErrInvalidCredential, err)
	}
	if leaf.Subject.CommonName == "" {
		// It names nobody: no credential, not a failed one, as Kubernetes'
		// CommonNameUserConversion, so that a bearer token sent with it
		// still counts.
		return nil, false, nil
	}
	groups := append([]string{}, leaf.Subject.Organization...)
	u := &User{Name: leaf.Subject.CommonName, Groups: withAuthenticated(leaf.Subject.CommonName, groups)}
	if c.verified != nil {
		until := leaf.NotAfter
		for _, chain := range chains {
			for _, cert := range chain {
				if cert.NotAfter.Before(until) {
					until = cert.NotAfter
				}
			}
		}
		cached := *u
		cached.Groups = append([]string{}, u.Groups...)
		c.verified.Add(key, verifiedChain{user: &cached, until: until})
	}
	return u, true, nil
}

// Tokens authenticates static bearer tokens.
type Tokens struct {
	byHash map[[32]byte]*User
}

// NewTokens returns a token authenticator for the given token→user map.
func NewTokens(tokens map[string]User) *Tokens {
	t := &Tokens{byHash: map[[32]byte]*User{}}
	for tok, u := range tokens {
		if tok == "" {
			continue
		}
		u := u
		u.Groups = withAuthenticated(u.Name, u.Groups)
		t.byHash[sha256.Sum256([]byte(tok))] = &u
	}
	return t
}

// AuthenticateToken implements TokenAuthenticator. Tokens are compared by
// hash in constant time so that timing reveals nothing about a valid token.
func (t *Tokens) AuthenticateToken(_ context.Context, tok string) (*User, bool, error) {
	sum := sha256.Sum256([]byte(tok))
	var match *User
	for k, u := range t.byHash {
		if subtle.ConstantTimeCompare(k[:], sum[:]) == 1 {
			match = u
		}
	}
	if match == nil {
		return nil, false, nil
	}
	return match, true, nil
}

// AudienceAgnostic wraps a token authenticator whose tokens name no
// audience (static tokens), as Kubernetes' WrapAudienceAgnosticToken: such
// a token is good for the API server's own audiences only, so a TokenReview
// asking about another audience (another service checking what a client
// presented to it) does not accept a token meant for the API server.
type AudienceAgnostic struct {
	// Audiences are the API server's.
	Audiences []string
	Tokens    TokenAuthenticator
}

// AuthenticateToken implements TokenAuthenticator.
func (a AudienceAgnostic) AuthenticateToken(ctx context.Context, tok string) (*User, bool, error) {
	want := AudiencesFrom(ctx)
	if len(want) == 0 {
		return a.Tokens.AuthenticateToken(ctx, tok)
	}
	auds := IntersectAudiences(a.Audiences, want)
	if len(auds) == 0 {
		return nil, false, nil
	}
	u, ok, err := a.Tokens.AuthenticateToken(ctx, tok)
	if err != nil || !ok {
		return nil, false, err
	}
	c := *u // the authenticator's user may be shared between requests
	c.Audiences = auds
	return &c, true, nil
}

// IntersectAudiences returns the audiences of want that are in have, in
// want's order.
func IntersectAudiences(have, want []string) []string {
	var out []string
	for _, w := range want {
		for _, h := range have {
			if w == h {
				out = append(out, w)
				break
			}
		}
	}
	return out
}

// withAuthenticated adds system:authenticated to the groups of an
// authenticated user, as Kubernetes' AuthenticatedGroupAdder: not to
// system:anonymous, nor where the groups already name system:authenticated
// or system:unauthenticated.
func withAuthenticated(name string, groups []string) []string {
	if name == UserAnonymous {
		return groups
	}
	for _, g := range groups {
		if g == GroupAuthenticated || g == GroupUnauthed {
			return groups
		}
	}
	return append(groups, GroupAuthenticated)
}

type audiencesKey struct{}

// WithAudiences records the audiences a token must be valid for (a
// TokenReview's spec.audiences); without it, the API server's own.
func WithAudiences(ctx context.Context, aud []string) context.Context {
	if len(aud) == 0 {
		return ctx
	}
	return context.WithValue(ctx, audiencesKey{}, aud)
}

// AudiencesFrom returns the audiences recorded by WithAudiences.
func AudiencesFrom(ctx context.Context) []string {
	a, _ := ctx.Value(audiencesKey{}).([]string)
	return a
}

// ReadTokenFile parses a Kubernetes static token file: CSV lines of
// token,user,uid[,"group1,group2"]. Blank lines and lines starting with #
// are skipped; a duplicate token, an empty token or user, or a malformed
// line is an error naming the line.
func ReadTokenFile(path string) (map[string]User, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	r.Comment = '#'
	out := map[string]User{}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		if len(rec) < 3 {
			return nil, fmt.Errorf("%s line %d: want token,user,uid[,groups], got %d fields", path, line, len(rec))
		}
		tok, name := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1])
		if tok == "" || name == "" {
			return nil, fmt.Errorf("%s line %d: token and user must not be empty", path, line)
		}
		if len(tok) > MaxTokenBytes {
			return nil, fmt.Errorf("%s line %d: token is longer than %d bytes", path, line, MaxTokenBytes)
		}
		if _, dup := out[tok]; dup {
			return nil, fmt.Errorf("%s line %d: duplicate token", path, line)
		}
		u := User{Name: name, UID: strings.TrimSpace(rec[2])}
		if len(rec) > 3 {
			for _, g := range strings.Split(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		out[tok] = u
	}
}
