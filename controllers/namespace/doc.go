// Package namespace finishes namespace deletion. When a Namespace carrying the "kubernetes" finalizer
// is deleted, the apiserver only marks it Terminating; this controller then deletes every namespaced
// resource inside it that can be deleted (found through discovery, in the background, with
// deletecollection through the metadata client, or one by one where deletecollection is not
// served), reports progress in the namespace's status conditions, and, once nothing is left, removes
// the finalizer through the namespaces/finalize subresource so the apiserver can remove the
// Namespace itself.
//
// As in Kubernetes: the content is deleted while the namespace has any spec finalizer, even when
// the "kubernetes" one was removed by someone else; only one with no spec finalizer left is left
// alone. A namespace is worked on 5 seconds after it is seen terminating, once every API
// server refuses new content in it; one whose discovery failed for some API group, or listed a group
// version that does not parse, is not finalized, as that group may hold objects of the namespace.
// What remains after the deletes is waited for as Kubernetes estimates it: pods for the longest
// grace period of those still running (counted from the namespace's deletion), objects held by
// finalizers for 15 seconds, each looked at again after half the estimate; what remains beyond
// that is a failure (NamespaceDeletionContentFailure), retried with backoff (at least once a
// minute, as Kubernetes).
package namespace
