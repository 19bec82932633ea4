// Package namespace finishes namespace deletion. When a Namespace carrying the "kubernetes" finalizer
// is deleted, the apiserver only marks it Terminating; this controller then deletes every namespaced
// resource inside it (found through discovery, deleted with deletecollection through the metadata
// client, or one by one where deletecollection is not served), reports progress in the namespace's
// status conditions, and, once nothing is left, removes the finalizer through the namespaces/finalize
// subresource so the apiserver can remove the Namespace itself. As in Kubernetes, a namespace whose
// discovery failed for some API group is not finalized: the group may hold objects of the namespace.
// What remains is waited for as Kubernetes estimates it: pods for the longest grace period of those
// still running (counted from the namespace's deletion), objects held by finalizers for 15 seconds,
// each looked at again after half the estimate; what remains beyond that is a failure
// (NamespaceDeletionContentFailure), retried with backoff.
package namespace
