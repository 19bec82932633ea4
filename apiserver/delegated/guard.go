// Package delegated serves a control-plane component's own HTTPS endpoint
// (health and /metrics of a standalone scheduler or controller manager) and
// vets its callers through the API server, as Kubernetes' components do with
// delegated authentication and authorization: the caller's bearer token is
// checked with a TokenReview, and what it may do with a SubjectAccessReview,
// so the cluster's RBAC on non-resource URLs (system:monitoring grants get
// on /metrics) governs who scrapes the component.
package delegated

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Anonymous is who a caller without credentials is, as on the API server.
var Anonymous = authenticationv1.UserInfo{Username: "system:anonymous", Groups: []string{"system:unauthenticated"}}

// Guard admits a request to next only if the API server says its caller may
// make it. Paths in public (the health checks a liveness probe calls without
// credentials) are always admitted, as Kubernetes' components'
// --authorization-always-allow-paths.
type Guard struct {
	client kubernetes.Interface
	public []string
	next   http.Handler
}

// NewGuard guards next; client is the component's own, which must be allowed
// to create tokenreviews and subjectaccessreviews (system:kube-scheduler and
// system:kube-controller-manager are).
func NewGuard(client kubernetes.Interface, next http.Handler, public ...string) *Guard {
	return &Guard{client: client, public: public, next: next}
}

func (g *Guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if slices.Contains(g.public, r.URL.Path) {
		g.next.ServeHTTP(w, r)
		return
	}
	user, err := g.authenticate(r.Context(), r.Header.Get("Authorization"))
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

// authenticate is the caller: Anonymous without an Authorization header,
// else the user the API server finds for its bearer token.
func (g *Guard) authenticate(ctx context.Context, header string) (authenticationv1.UserInfo, *statusError) {
	if header == "" {
		return Anonymous, nil
	}
	token, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return authenticationv1.UserInfo{}, &statusError{http.StatusUnauthorized, "Unauthorized: only bearer tokens are accepted"}
	}
	tr, err := g.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: strings.TrimSpace(token)},
	}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, &statusError{http.StatusInternalServerError, "authentication failed: " + err.Error()}
	}
	if !tr.Status.Authenticated {
		msg := "Unauthorized"
		if tr.Status.Error != "" {
			msg += ": " + tr.Status.Error
		}
		return authenticationv1.UserInfo{}, &statusError{http.StatusUnauthorized, msg}
	}
	return tr.Status.User, nil
}

// authorize asks the API server's authorizer whether user may use verb on
// the non-resource path.
func (g *Guard) authorize(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (bool, string, error) {
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
