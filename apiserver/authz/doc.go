// Package authz is the authorization seam of the API server: the handler
// asks an Authorizer about every request's attributes (user, verb,
// resource, namespace, name). RBAC plugs in here; until then the
// authorizer allows every authenticated user.
package authz
