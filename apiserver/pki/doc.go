// Package pki creates and keeps the cluster's certificate authority and the
// certificates the API server needs: a serving certificate for HTTPS and an
// admin client certificate for the kubeconfig that `skiff server` writes.
//
// Everything lives as PEM files in one directory (mode 0700):
//
//	ca.crt, ca.key           cluster CA, ECDSA P-256, 10 years; never re-issued
//	node-ca.crt, node-ca.key node CA, likewise: signs node APIs' serving certificates
//	server.crt, server.key   serving certificate, 1 year
//	admin.crt, admin.key     client certificate CN=skiff-admin, O=system:masters, 1 year
//
// The node CA is apart from the cluster CA because a node's serving
// certificate names the addresses the node reports in its own Node status,
// which a compromised node can set to anything, the API server's own names
// and 127.0.0.1 included. Only the API server, dialing node APIs, trusts
// the node CA (NodeAPIRoots, with the cluster CA for certificates issued
// before the node CA existed); clients trust the cluster CA alone, so no
// node can pass for the API server. Servers of one cluster (sharing a
// PostgreSQL database) need the same CAs and sa.key, the node CA's pair
// among them, copied from the first server.
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
