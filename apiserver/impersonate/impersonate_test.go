package impersonate_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/apiserver/authz"
	"github.com/skiffkube/skiff/apiserver/impersonate"
)

// TestImpersonatedGroups: the groups of the identity acted as are those
// asked for, plus system:authenticated (system:unauthenticated for
// system:anonymous) unless one of the two was asked for, and a service
// account's own groups when none were, as Kubernetes' impersonation filter.
func TestImpersonatedGroups(t *testing.T) {
	requester := &authn.User{Name: "admin", Groups: []string{authn.GroupMasters, authn.GroupAuthenticated}}
	for _, tc := range []struct {
		user   string
		groups []string
		want   []string
	}{
		{"bob", nil, []string{"system:authenticated"}},
		{"bob", []string{"dev"}, []string{"dev", "system:authenticated"}},
		{"bob", []string{"system:authenticated"}, []string{"system:authenticated"}},
		{"bob", []string{"system:unauthenticated"}, []string{"system:unauthenticated"}},
		{"bob", []string{"dev", "system:unauthenticated"}, []string{"dev", "system:unauthenticated"}},
		{"system:anonymous", nil, []string{"system:unauthenticated"}},
		{"system:anonymous", []string{"system:unauthenticated"}, []string{"system:unauthenticated"}},
		{"system:anonymous", []string{"system:authenticated"}, []string{"system:authenticated", "system:unauthenticated"}},
		{"system:serviceaccount:ns:sa", nil, []string{"system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"}},
		{"system:serviceaccount:ns:sa", []string{"system:unauthenticated"}, []string{"system:unauthenticated"}},
	} {
		h := http.Header{}
		h.Set(impersonate.HeaderUser, tc.user)
		for _, g := range tc.groups {
			h.Add(impersonate.HeaderGroup, g)
		}
		u, err := impersonate.Resolve(context.Background(), h, requester, authz.AllowAuthenticated{})
		if err != nil {
			t.Errorf("%s %v: %v", tc.user, tc.groups, err)
			continue
		}
		if u.Name != tc.user || !slices.Equal(u.Groups, tc.want) {
			t.Errorf("%s as groups %v: got %s %v, want groups %v", tc.user, tc.groups, u.Name, u.Groups, tc.want)
		}
	}
}
