// Package authn turns a request's credentials into a user: client
// certificates signed by the cluster CA (CN = user, O = groups) and static
// bearer tokens (the admin token from config). A request with no
// credentials is anonymous; whether that is allowed is the caller's call.
package authn
