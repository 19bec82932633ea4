// Package tokensecret keeps Secrets of type kubernetes.io/service-account-token, as Kubernetes'
// token controller does for the ones users create by hand. Given the service account named in the
// kubernetes.io/service-account.name annotation (and, once recorded, of the uid in
// kubernetes.io/service-account.uid), it stores a token, the namespace and the cluster CA in the
// Secret, and puts back the namespace and CA when they are missing or the CA differs. A Secret whose
// account does not exist (checked with a live read when the cache misses it) is deleted, so deleting
// a service account deletes its token Secrets; a deleted token Secret is taken out of its account's
// secrets list. The token is requested through serviceaccounts/token and bound to the Secret, so it
// stops working when the Secret (or the service account) is deleted.
package tokensecret
