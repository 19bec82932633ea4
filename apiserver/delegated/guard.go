// Package delegated serves a control-plane component's own HTTPS endpoint
// (health, /metrics and /configz of a standalone scheduler or controller
// manager) and vets its callers through the API server, as Kubernetes'
// components do with delegated authentication and authorization: the
// caller's bearer token is checked with a TokenReview, and what it may do
// with a SubjectAccessReview, so the cluster's RBAC on non-resource URLs
// (system:monitoring grants get on /metrics) governs who scrapes the
// component.
package delegated

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/skiffkube/skiff/apiserver/authn"
)

// Anonymous is who a caller without credentials is, as on the API server.
var Anonymous = authenticationv1.UserInfo{Username: "system:anonymous", Groups: []string{"system:unauthenticated"}}

// Guard admits a request to next only if the API server says its caller may
// make it. Paths in public (the health checks a liveness probe calls without
// credentials) are always admitted, as Kubernetes' components'
// --authorization-always-allow-paths.
//
// Answers are kept for CacheTTL, as Kubernetes' delegating authenticator and
// authorizer keep theirs: a scraper calling every few seconds costs the API
// server two reviews per CacheTTL, not per scrape, and a revoked token or
// role binding takes effect within that time.
type Guard struct {
	client kubernetes.Interface
	public []string
	next   http.Handler
	// users maps a token's SHA-256 to its review's user (or refusal);
	// verdicts maps a user, verb and path to the authorizer's answer.
	users, verdicts *cache.LRUExpireCache
}

// CacheTTL is how long a review's answer is reused; cacheSize bounds each
// cache (least recently used answers go first).
const (
	CacheTTL  = 10 * time.Second
	cacheSize = 1024
)

// NewGuard guards next; client is the component's own, which must be allowed
// to create tokenreviews and subjectaccessreviews (system:kube-scheduler and
// system:kube-controller-manager are).
func NewGuard(client kubernetes.Interface, next http.Handler, public ...string) *Guard {
	return newGuard(client, next, clock.RealClock{}, public...)
}

func newGuard(client kubernetes.Interface, next http.Handler, now cache.Clock, public ...string) *Guard {
	return &Guard{client: client, public: public, next: next,
		users: cache.NewLRUExpireCacheWithClock(cacheSize, now), verdicts: cache.NewLRUExpireCacheWithClock(cacheSize, now)}
}

func (g *Guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if slices.Contains(g.public, r.URL.Path) {
		g.next.ServeHTTP(w, r)
		return
	}
	user, err := g.authenticate(r)
	if err != nil {
		writeStatus(w, err.code, err.msg)
		return
	}
	verb := strings.ToLower(r.Method)
	allowed, reason, aerr := g.authorize(r.Context(), user, verb, r.URL.Path)
	if aerr != nil {
		writeStatus(w, http.StatusInternalServerError, "authorization failed: "+aerr.Error())
		return
	}
	if !allowed {
		msg := fmt.Sprintf("forbidden: User %q cannot %s path %q", user.Username, verb, r.URL.Path)
		if reason != "" {
			msg += ": " + reason
		}
		writeStatus(w, http.StatusForbidden, msg)
		return
	}
	g.next.ServeHTTP(w, r)
}

// statusError is a refusal with its HTTP code.
type statusError struct {
	code int
	msg  string
}

// authenticate is the caller: the user the API server finds for the
// request's bearer token, read by the API server's own rule
// (authn.BearerToken, Kubernetes' bearertoken authenticator, which
// delegated authentication uses too); Anonymous when the request carries no
// bearer token (no Authorization header, another scheme, or none left
// after the scheme), as the anonymous authenticator after the union.
func (g *Guard) authenticate(r *http.Request) (authenticationv1.UserInfo, *statusError) {
	token, ok := authn.BearerToken(r)
	if !ok {
		return Anonymous, nil
	}
	ctx := r.Context()
	// The cache holds the token's hash, never the token.
	key := sha256.Sum256([]byte(token))
	if v, ok := g.users.Get(key); ok {
		st := v.(authenticationv1.TokenReviewStatus)
		return reviewed(st)
	}
	tr, err := g.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		// Not cached: the next request asks again.
		return authenticationv1.UserInfo{}, &statusError{http.StatusInternalServerError, "authentication failed: " + err.Error()}
	}
	g.users.Add(key, tr.Status, CacheTTL)
	return reviewed(tr.Status)
}

// reviewed is the user a TokenReview found, or the 401 it amounts to.
func reviewed(st authenticationv1.TokenReviewStatus) (authenticationv1.UserInfo, *statusError) {
	if !st.Authenticated {
		msg := "Unauthorized"
		if st.Error != "" {
			msg += ": " + st.Error
		}
		return authenticationv1.UserInfo{}, &statusError{http.StatusUnauthorized, msg}
	}
	return st.User, nil
}

// verdict is a SubjectAccessReview's answer.
type verdict struct {
	allowed bool
	reason  string
}

// authorize asks the API server's authorizer whether user may use verb on
// the non-resource path.
func (g *Guard) authorize(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (bool, string, error) {
	key, err := json.Marshal([]any{user, verb, path})
	if err != nil {
		return false, "", err
	}
	if v, ok := g.verdicts.Get(string(key)); ok {
		d := v.(verdict)
		return d.allowed, d.reason, nil
	}
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := g.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, "", err
	}
	g.verdicts.Add(string(key), verdict{sar.Status.Allowed, sar.Status.Reason}, CacheTTL)
	return sar.Status.Allowed, sar.Status.Reason, nil
}

// writeStatus answers with a metav1.Status, as the API server would.
func writeStatus(w http.ResponseWriter, code int, msg string) {
	reason := metav1.StatusReasonInternalError
	switch code {
	case http.StatusUnauthorized:
		reason = metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		reason = metav1.StatusReasonForbidden
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(&metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: msg, Reason: reason, Code: int32(code),
	})
}
