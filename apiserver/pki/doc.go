// Package pki creates and keeps the cluster's certificate authority and the
// certificates the API server needs: a serving certificate for HTTPS and an
// admin client certificate for the kubeconfig that `skiff server` writes.
//
// Everything lives as PEM files in one directory (mode 0700):
//
//	ca.crt, ca.key         cluster CA, ECDSA P-256, 10 years; never re-issued
//	server.crt, server.key serving certificate, 1 year
//	admin.crt, admin.key   client certificate CN=skiff-admin, O=system:masters, 1 year
//
// Keys are written 0600, certificates 0644, each through a temporary file and a
// rename so a crash never leaves half a file. Ensure reuses what is there; it
// re-issues the serving certificate when a wanted subject alternative name is
// missing (a --tls-san was added, the host got a new address) or when it is
// within 30 days of expiry, and the admin certificate when it nears expiry.
// The CA is never replaced automatically: replacing it would invalidate every
// kubeconfig and node credential issued from it.
//
// The admin identity follows Kubernetes' convention: the group system:masters
// is what the default RBAC policy grants everything.
//
// WriteKubeconfig writes a kubeconfig whose cluster, user and context are all
// named "skiff" (so it can be merged into ~/.kube/config next to others
// without clobbering a k3s or kind "default"), with the CA and the client
// credential inline: several client libraries drop file paths when they copy
// a rest.Config.
package pki
