// Package tokensecret fills Secrets of type kubernetes.io/service-account-token, as Kubernetes'
// token controller does for the ones users create by hand: given the service account named in the
// kubernetes.io/service-account.name annotation, it stores a token, the namespace and the cluster CA in
// the Secret. The token is requested through serviceaccounts/token and bound to the Secret, so it stops
// working when the Secret (or the service account) is deleted.
package tokensecret
