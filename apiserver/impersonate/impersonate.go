package impersonate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/apiserver/authz"
)

// Header names, as kubectl --as/--as-group/--as-uid send them.
const (
	HeaderUser        = "Impersonate-User"
	HeaderGroup       = "Impersonate-Group"
	HeaderUID         = "Impersonate-Uid"
	HeaderExtraPrefix = "Impersonate-Extra-"
)

const saPrefix = "system:serviceaccount:"

// Requested tells whether the request carries any impersonation header.
func Requested(h http.Header) bool {
	for k := range h {
		if k == HeaderUser || k == HeaderGroup || k == HeaderUID || strings.HasPrefix(k, HeaderExtraPrefix) {
			return true
		}
	}
	return false
}

// Resolve returns the identity the request asks to act as, after asking az
// whether requester may impersonate each of its parts. Errors are API
// errors: 400 for malformed headers, 403 naming the refused part.
func Resolve(ctx context.Context, h http.Header, requester *authn.User, az authz.Authorizer) (*authn.User, error) {
	name := h.Get(HeaderUser)
	groups := h.Values(HeaderGroup)
	uid := h.Get(HeaderUID)
	extra := map[string][]string{}
	for k, vs := range h {
		if !strings.HasPrefix(k, HeaderExtraPrefix) {
			continue
		}
		key, err := url.PathUnescape(strings.TrimPrefix(k, HeaderExtraPrefix))
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("malformed impersonation header %s: %v", k, err))
		}
		extra[strings.ToLower(key)] = vs
	}
	if name == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("requested impersonation of groups, uid or extra without impersonating a user (set %s)", HeaderUser))
	}

	var checks []authz.Attributes
	if ns, sa, ok := serviceAccount(name); ok {
		checks = append(checks, authz.Attributes{Resource: "serviceaccounts", Namespace: ns, Name: sa})
	} else {
		checks = append(checks, authz.Attributes{Resource: "users", Name: name})
	}
	for _, g := range groups {
		checks = append(checks, authz.Attributes{Resource: "groups", Name: g})
	}
	if uid != "" {
		checks = append(checks, authz.Attributes{APIGroup: "authentication.k8s.io", Resource: "uids", Name: uid})
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range extra[k] {
			checks = append(checks, authz.Attributes{APIGroup: "authentication.k8s.io", Resource: "userextras", Subresource: k, Name: v})
		}
	}
	for _, a := range checks {
		a.User, a.Verb, a.ResourceRequest = requester, "impersonate", true
		ok, reason, err := az.Authorize(ctx, a)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if !ok {
			return nil, forbidden(requester, a, reason)
		}
	}

	u := &authn.User{Name: name, UID: uid, Groups: append([]string(nil), groups...)}
	if len(extra) > 0 {
		u.Extra = extra
	}
	if ns, _, ok := serviceAccount(name); ok && len(groups) == 0 {
		u.Groups = append(u.Groups, "system:serviceaccounts", "system:serviceaccounts:"+ns)
	}
	// As Kubernetes: system:anonymous is in system:unauthenticated; anyone
	// else is in system:authenticated unless the groups asked for name
	// system:unauthenticated (acting as an unauthenticated client).
	if name == authn.UserAnonymous {
		u.Groups = appendMissing(u.Groups, authn.GroupUnauthed)
	} else if !slices.Contains(u.Groups, authn.GroupUnauthed) {
		u.Groups = appendMissing(u.Groups, authn.GroupAuthenticated)
	}
	return u, nil
}

// Strip removes the impersonation headers once they are applied.
func Strip(h http.Header) {
	for k := range h {
		if k == HeaderUser || k == HeaderGroup || k == HeaderUID || strings.HasPrefix(k, HeaderExtraPrefix) {
			h.Del(k)
		}
	}
}

func serviceAccount(name string) (namespace, sa string, ok bool) {
	if !strings.HasPrefix(name, saPrefix) {
		return "", "", false
	}
	namespace, sa, ok = strings.Cut(strings.TrimPrefix(name, saPrefix), ":")
	return namespace, sa, ok && namespace != "" && sa != ""
}

func appendMissing(groups []string, g string) []string {
	for _, x := range groups {
		if x == g {
			return groups
		}
	}
	return append(groups, g)
}

// forbidden words the refusal as Kubernetes does.
func forbidden(u *authn.User, a authz.Attributes, reason string) error {
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	msg := fmt.Sprintf("User %q cannot impersonate resource %q in API group %q", u.Name, res, a.APIGroup)
	if a.Namespace != "" {
		msg += fmt.Sprintf(" in the namespace %q", a.Namespace)
	} else {
		msg += " at the cluster scope"
	}
	if reason != "" {
		msg += ": " + reason
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}, a.Name, errors.New(msg))
}
