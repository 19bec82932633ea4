// Package serviceaccount issues and checks service account tokens: JWTs
// signed with the cluster's service account key (ES256), carrying
// Kubernetes' claims (issuer, subject system:serviceaccount:<ns>:<name>,
// audiences, expiry, and the kubernetes.io claim naming the service
// account and the pod, secret or node the token is bound to). A token is
// valid only while its service account, and the object it is bound to,
// still exist with the UIDs it names. It also serves the serviceaccounts/token
// subresource (TokenRequest, `kubectl create token`).
package serviceaccount
