// Package rbac is the RBAC authorizer with Kubernetes' semantics: a cache of
// Roles, ClusterRoles and their bindings, kept in step with the store by a
// watch and indexed by subject so that a decision reads only the bindings of
// the requesting user and its groups; the rule matching of
// rbac.authorization.k8s.io/v1 (verbs, API groups, resources with
// subresources, resourceNames, non-resource URLs, "*" wildcards); and the
// ClusterRole aggregation controller that fills the rules of roles with an
// aggregationRule from the roles their label selectors pick.
package rbac
