// Package bootstrap holds skiff's default RBAC policy (cluster-admin,
// admin/edit/view with their aggregation labels, the system:* roles of
// discovery, basic users and skiff's own components, a system:controller:*
// role per controller bound to its kube-system service account, and their
// bindings)
// and reconciles it into the store at start: missing roles and bindings are
// created; existing ones annotated rbac.authorization.kubernetes.io/autoupdate
// "true" get missing rules and subjects added; others are left as the
// operator edited them.
package bootstrap
