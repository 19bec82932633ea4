package authz

import (
	"context"

	"github.com/skiffkube/skiff/apiserver/authn"
)

// Attributes describe one request for an authorization decision.
type Attributes struct {
	User            *authn.User
	Verb            string
	APIGroup        string
	APIVersion      string
	Resource        string
	Subresource     string
	Namespace       string
	Name            string
	ResourceRequest bool
	Path            string
	// FieldSelector is a list or watch's fieldSelector, as sent; the node
	// authorizer lets a node list only its own pods
	// (spec.nodeName=<node>).
	FieldSelector string
}

// Authorizer decides whether a request may proceed. reason explains a denial.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (allowed bool, reason string, err error)
}

// AllowAuthenticated allows every request that has an authenticated user.
type AllowAuthenticated struct{}

// Authorize implements Authorizer.
func (AllowAuthenticated) Authorize(_ context.Context, a Attributes) (bool, string, error) {
	if a.User == nil {
		return false, "no user", nil
	}
	for _, g := range a.User.Groups {
		if g == authn.GroupAuthenticated {
			return true, "", nil
		}
	}
	return false, "not authenticated", nil
}
