// Package authz is the authorization seam of the API server: the handler
// asks an Authorizer about every request's attributes (user, verb,
// resource, namespace, name, or a non-resource path). The server chains
// system:masters, the node authorizer (authz/node) and RBAC (authz/rbac)
// with Union; the first to allow decides.
package authz
