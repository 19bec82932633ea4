package authz

import (
	"context"

	"github.com/skiffkube/skiff/apiserver/authn"
)

// Union asks each authorizer in order; the first that allows decides. A
// denial's reason is the last non-empty one.
type Union []Authorizer

// Authorize implements Authorizer.
func (u Union) Authorize(ctx context.Context, a Attributes) (bool, string, error) {
	reason := ""
	for _, z := range u {
		ok, r, err := z.Authorize(ctx, a)
		if err != nil {
			return false, "", err
		}
		if ok {
			return true, r, nil
		}
		if r != "" {
			reason = r
		}
	}
	return false, reason, nil
}

// PrivilegedGroups allows every request of a member of one of its groups
// without consulting RBAC, as Kubernetes does for system:masters: the admin
// can always repair a broken policy.
type PrivilegedGroups []string

// Authorize implements Authorizer.
func (p PrivilegedGroups) Authorize(_ context.Context, a Attributes) (bool, string, error) {
	if a.User == nil {
		return false, "", nil
	}
	for _, g := range a.User.Groups {
		for _, pg := range p {
			if g == pg {
				return true, "", nil
			}
		}
	}
	return false, "", nil
}

// Masters is the group Kubernetes treats as superusers.
var Masters = PrivilegedGroups{authn.GroupMasters}
