package serviceaccount

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/apiserver/authz"
	"github.com/skiffkube/skiff/storage"
)

// DefaultIssuer is Kubernetes' default --service-account-issuer; the API
// server's own audience is the issuer, as in Kubernetes.
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// Groups every service account is in.
const (
	AllServiceAccountsGroup = "system:serviceaccounts"
	namespaceGroupPrefix    = "system:serviceaccounts:"
	userPrefix              = "system:serviceaccount:"
)

// Extra keys Kubernetes attaches to a service account user.
const (
	ExtraPodName      = "authentication.kubernetes.io/pod-name"
	ExtraPodUID       = "authentication.kubernetes.io/pod-uid"
	ExtraCredentialID = "authentication.kubernetes.io/credential-id"
	ExtraNodeName     = "authentication.kubernetes.io/node-name"
	ExtraNodeUID      = "authentication.kubernetes.io/node-uid"
)

// Store is the part of the store tokens are checked against, and the
// last-used labels of legacy token Secrets written through.
type Store interface {
	Get(ctx context.Context, key string, revision int64) (*storage.KeyValue, error)
	Update(ctx context.Context, key string, value []byte, expectedRevision int64, ttl time.Duration, opts ...storage.WriteOption) (*storage.KeyValue, error)
}

// ref names one object a token refers to.
type ref struct {
	Name string    `json:"name"`
	UID  types.UID `json:"uid"`
}

// k8sClaims is the private "kubernetes.io" claim.
type k8sClaims struct {
	Namespace      string `json:"namespace"`
	ServiceAccount ref    `json:"serviceaccount"`
	Pod            *ref   `json:"pod,omitempty"`
	Secret         *ref   `json:"secret,omitempty"`
	// Node, beside Pod, is the node the pod ran on when the token was
	// issued (Kubernetes' ServiceAccountTokenPodNodeInfo): information
	// for the token's audience, not a binding the token dies with.
	// Without Pod it is the object the token is bound to
	// (ServiceAccountTokenNodeBinding), checked as a pod is.
	Node *ref `json:"node,omitempty"`
	// WarnAfter is when an extended token should have been replaced.
	WarnAfter *jwt.NumericDate `json:"warnafter,omitempty"`
}

type claims struct {
	jwt.RegisteredClaims
	Kubernetes k8sClaims `json:"kubernetes.io"`
}

// Tokens issues and authenticates service account tokens.
type Tokens struct {
	key       *ecdsa.PrivateKey
	kid       string // the key's ID (keyID)
	issuer    string
	audiences []string // what the API server accepts by default
	store     Store
	// authz decides which audiences beyond their pods' a node may ask
	// for (nil: none).
	authz authz.Authorizer
	now   func() time.Time
	// used counts authenticated tokens by kind, as Kubernetes' metrics.
	used usage
	// tracker dates the last use of legacy token Secrets.
	tracker *lastUsedTracker
}

// usage are Kubernetes' serviceaccount_*_tokens_total counters: a token a
// Secret holds (what the token Secret controller writes, isLegacy) is
// legacy; an extended kube-api-access token used after its warnafter time
// is stale, a sign that a client never rereads its token file. Legacy
// tokens are also counted as auto-generated (their account lists the
// Secret) or manual, and refused ones marked invalid.
type usage struct {
	legacy, stale, valid                  prometheus.Counter
	legacyAuto, legacyManual, invalidAuto prometheus.Counter
}

func newUsage() usage {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Subsystem: "serviceaccount", Name: name, Help: help})
	}
	return usage{
		legacy: c("legacy_tokens_total", "Cumulative legacy service account tokens used"),
		stale:  c("stale_tokens_total", "Cumulative stale projected service account tokens used"),
		valid:  c("valid_tokens_total", "Cumulative valid projected service account tokens used"),

		legacyAuto:   c("legacy_auto_token_uses_total", "Cumulative auto-generated legacy tokens used"),
		legacyManual: c("legacy_manual_token_uses_total", "Cumulative manually created legacy tokens used"),
		invalidAuto:  c("invalid_legacy_auto_token_uses_total", "Cumulative invalid auto-generated legacy tokens used"),
	}
}

// Collectors are the token usage counters, for the API server's /metrics.
func (t *Tokens) Collectors() []prometheus.Collector {
	u := t.used
	return []prometheus.Collector{u.legacy, u.stale, u.valid, u.legacyAuto, u.legacyManual, u.invalidAuto}
}

// New returns a token issuer/authenticator. issuer "" takes DefaultIssuer;
// the API server accepts tokens for its issuer as audience. az, the API
// server's authorizer, may grant a node audiences its pods do not use
// (VerbRequestAudience); with nil it grants none. log (nil: the default)
// gets the failures of the legacy token Secrets' label writes.
func New(key *ecdsa.PrivateKey, issuer string, store Store, az authz.Authorizer, log *slog.Logger) (*Tokens, error) {
	if key == nil || store == nil {
		return nil, errors.New("serviceaccount: a signing key and a store are required")
	}
	if issuer == "" {
		issuer = DefaultIssuer
	}
	if log == nil {
		log = slog.Default()
	}
	t := &Tokens{key: key, issuer: issuer, audiences: []string{issuer}, store: store, authz: az, now: time.Now, used: newUsage(),
		tracker: &lastUsedTracker{store: store, log: log, inFlight: map[string]bool{}}}
	kid, err := keyID(t)
	if err != nil {
		return nil, err
	}
	t.kid = kid
	return t, nil
}

// APIAudiences are the audiences the API server itself accepts.
func (t *Tokens) APIAudiences() []string { return t.audiences }

// Binding is what a token is issued for.
type Binding struct {
	ServiceAccount *corev1.ServiceAccount
	Pod            *corev1.Pod    // optional
	Secret         *corev1.Secret // optional
	// Node, optional, is the bound pod's node with Pod, else the node
	// the token is bound to. A Secret-bound token has neither.
	Node      *corev1.Node
	Audiences []string // empty: the API server's
	TTL       time.Duration
	// WarnAfter, when set, is how long after issue the token should have
	// been replaced (the "warnafter" claim of an extended token).
	WarnAfter time.Duration
}

// Issue signs a token and returns it with its expiry.
func (t *Tokens) Issue(b Binding) (string, time.Time, error) {
	// One binding per token, as Kubernetes' claims: audiences that read
	// the claims take a Secret-bound token as bound to nothing else.
	if b.Secret != nil && (b.Pod != nil || b.Node != nil) {
		return "", time.Time{}, errors.New("serviceaccount: a token is bound to a Secret alone, not also to a pod or node")
	}
	sa := b.ServiceAccount
	now := t.now().UTC().Truncate(time.Second)
	exp := now.Add(b.TTL)
	aud := b.Audiences
	if len(aud) == 0 {
		aud = t.audiences
	}
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: t.issuer, Subject: userPrefix + sa.Namespace + ":" + sa.Name, Audience: aud,
			ExpiresAt: jwt.NewNumericDate(exp), IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now),
			ID: uuid.NewString(),
		},
		Kubernetes: k8sClaims{Namespace: sa.Namespace, ServiceAccount: ref{Name: sa.Name, UID: sa.UID}},
	}
	if b.Pod != nil {
		c.Kubernetes.Pod = &ref{Name: b.Pod.Name, UID: b.Pod.UID}
	}
	if b.Secret != nil {
		c.Kubernetes.Secret = &ref{Name: b.Secret.Name, UID: b.Secret.UID}
	}
	if b.Node != nil {
		c.Kubernetes.Node = &ref{Name: b.Node.Name, UID: b.Node.UID}
	}
	if b.WarnAfter > 0 {
		c.Kubernetes.WarnAfter = jwt.NewNumericDate(now.Add(b.WarnAfter))
	}
	j := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	// The key's ID, as Kubernetes' tokens carry it: what a relying party
	// looks the key up by in the key set (JWKSPath).
	j.Header["kid"] = t.kid
	tok, err := j.SignedString(t.key)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("serviceaccount: signing token: %w", err)
	}
	return tok, exp, nil
}

// AuthenticateToken implements authn.TokenAuthenticator. Tokens that are
// not JWTs from this issuer are left to other authenticators; a token from
// this issuer that is expired, for another audience, or whose service
// account or bound object is gone is an invalid credential.
func (t *Tokens) AuthenticateToken(ctx context.Context, tok string) (*authn.User, bool, error) {
	if strings.Count(tok, ".") != 2 {
		return nil, false, nil
	}
	// Peek at the issuer without trusting anything, to decide whether
	// this token is ours at all.
	var peek jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(tok, &peek); err != nil || peek.Issuer != t.issuer {
		return nil, false, nil
	}
	wantAud := authn.AudiencesFrom(ctx)
	if len(wantAud) == 0 {
		wantAud = t.audiences
	}
	c := &claims{}
	_, err := jwt.ParseWithClaims(tok, c, func(*jwt.Token) (any, error) { return &t.key.PublicKey, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodES256.Alg()}), jwt.WithIssuer(t.issuer),
		jwt.WithExpirationRequired(), jwt.WithTimeFunc(t.now), jwt.WithLeeway(validityLeeway))
	if err != nil {
		return nil, false, fmt.Errorf("%w: service account token: %v", authn.ErrInvalidCredential, err)
	}
	auds := authn.IntersectAudiences(wantAud, c.Audience)
	if len(auds) == 0 {
		return nil, false, fmt.Errorf("%w: service account token: audience %v is not one of %v", authn.ErrInvalidCredential, []string(c.Audience), wantAud)
	}
	k := c.Kubernetes
	if c.Subject != userPrefix+k.Namespace+":"+k.ServiceAccount.Name {
		return nil, false, fmt.Errorf("%w: service account token: subject does not match its claims", authn.ErrInvalidCredential)
	}
	sa := &corev1.ServiceAccount{}
	if err := t.stillExists(ctx, "serviceaccounts", k.Namespace, k.ServiceAccount, sa); err != nil {
		return nil, false, err
	}
	u := &authn.User{
		Name: c.Subject, UID: string(k.ServiceAccount.UID),
		Groups:    []string{AllServiceAccountsGroup, namespaceGroupPrefix + k.Namespace, authn.GroupAuthenticated},
		Extra:     map[string][]string{ExtraCredentialID: {"JTI=" + c.ID}},
		Audiences: auds,
	}
	if k.Pod != nil {
		if err := t.stillExists(ctx, "pods", k.Namespace, *k.Pod, nil); err != nil {
			return nil, false, err
		}
		u.Extra[ExtraPodName] = []string{k.Pod.Name}
		u.Extra[ExtraPodUID] = []string{string(k.Pod.UID)}
	} else if k.Node != nil {
		// Bound to the node itself: it must still be that node.
		if err := t.stillExists(ctx, "nodes", "", *k.Node, nil); err != nil {
			return nil, false, err
		}
	}
	if k.Node != nil {
		u.Extra[ExtraNodeName] = []string{k.Node.Name}
		if k.Node.UID != "" { // a pod's node gone before the token was issued
			u.Extra[ExtraNodeUID] = []string{string(k.Node.UID)}
		}
	}
	legacy := false
	if k.Secret != nil {
		secret := &corev1.Secret{}
		if err := t.stillExists(ctx, "secrets", k.Namespace, *k.Secret, secret); err != nil {
			return nil, false, err
		}
		if legacy = isLegacy(secret, tok); legacy {
			if err := t.checkLegacy(ctx, secret, sa); err != nil {
				return nil, false, err
			}
		} else if issuedToHold(secret, c) {
			return nil, false, fmt.Errorf("%w: service account token: the token in secret %s/%s has been replaced; this one is no longer valid",
				authn.ErrInvalidCredential, secret.Namespace, secret.Name)
		}
	}
	switch {
	case legacy:
		t.used.legacy.Inc()
	case k.WarnAfter != nil && t.now().After(k.WarnAfter.Time):
		t.used.stale.Inc()
	default:
		t.used.valid.Inc()
	}
	return u, true, nil
}

// stillExists checks that the object a token names exists with its UID: a
// deleted and recreated service account does not inherit old tokens. The
// object is decoded into into (a metav1.Object), when not nil; namespace
// is "" for a cluster-scoped one (a node).
func (t *Tokens) stillExists(ctx context.Context, resource, namespace string, r ref, into any) error {
	key, what := "/registry/"+resource+"/"+r.Name, strings.TrimSuffix(resource, "s")+" "+r.Name
	if namespace != "" {
		key = "/registry/" + resource + "/" + namespace + "/" + r.Name
		what = strings.TrimSuffix(resource, "s") + " " + namespace + "/" + r.Name
	}
	kv, err := t.store.Get(ctx, key, 0)
	if errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("%w: service account token: %s no longer exists", authn.ErrInvalidCredential, what)
	}
	if err != nil {
		return err
	}
	var m struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	var target any = &m
	if into != nil {
		target = into
	}
	if err := json.Unmarshal(kv.Value, target); err != nil {
		return err
	}
	uid, deleting := m.Metadata.UID, m.Metadata.DeletionTimestamp
	if o, ok := into.(metav1.Object); ok {
		uid, deleting = o.GetUID(), o.GetDeletionTimestamp()
	}
	if uid != r.UID {
		return fmt.Errorf("%w: service account token: %s was deleted and recreated", authn.ErrInvalidCredential, what)
	}
	// An object being deleted (held by a finalizer, or a pod in its grace
	// period) still exists, but its tokens end a minute after its
	// deletion began, as Kubernetes' token validation allows that much
	// leeway: a terminating pod's token must not outlive it by its grace.
	if deleting != nil && deleting.Time.Before(t.now().Add(-deletedLeeway)) {
		return fmt.Errorf("%w: service account token: %s has been deleted", authn.ErrInvalidCredential, what)
	}
	return nil
}

// validityLeeway is how far outside its nbf..exp span a token is still
// accepted, as Kubernetes' validator allows (go-jose's DefaultLeeway): API
// servers whose clocks differ a little accept each other's tokens at once.
const validityLeeway = time.Minute

// deletedLeeway is how long after an object's deletion began the tokens
// bound to it still authenticate (Kubernetes' jwt.DefaultLeeway).
const deletedLeeway = time.Minute
