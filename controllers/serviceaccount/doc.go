// Package serviceaccount makes sure every active namespace has the "default" ServiceAccount, which pods
// use when they name none. A deleted default ServiceAccount is recreated; terminating namespaces are
// left alone. (Tokens are bound tokens requested by the node agent, so no token Secrets are created.)
package serviceaccount
