// Package impersonate applies Kubernetes' impersonation headers
// (Impersonate-User, -Group, -Uid, -Extra-<key>): the authenticated user
// acts as another identity when, and only when, the authorizer grants it
// the "impersonate" verb on each part of that identity.
package impersonate
