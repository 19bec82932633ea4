// Package garbagecollector deletes objects whose owners are gone, following metadata.ownerReferences
// across every resource the API serves (custom resources included).
//
// It discovers resources periodically and keeps one informer ("monitor") per resource, each indexed
// by owner UID, so it can find any object's dependents. A monitor is metadata-only, unless another
// loop of the process already watches the resource's full objects (Options.Shared, as in skiff
// server, where pods, ReplicaSets and the like are cached for the controllers and the scheduler):
// then it shares that informer instead of opening a second watch and keeping a second cache, as
// kube-controller-manager's collector does with its typed informers.
// Work items are single objects; processing one decides, from a live read, what it needs:
//
//   - an owner being deleted with the "orphan" finalizer: drop its ownerReference from every
//     dependent, then remove the finalizer (kubectl delete --cascade=orphan);
//   - an owner being deleted with the "foregroundDeletion" finalizer: delete every dependent, and
//     remove the finalizer once no dependent with blockOwnerDeletion=true is left
//     (kubectl delete --cascade=foreground);
//   - a dependent: if every owner is gone (or waiting for its dependents) delete it, in the
//     foreground when an owner is waiting and it has dependents of its own; if some owner is alive,
//     only drop the references to owners that are gone (background deletion, the default).
//
// As in Kubernetes: a dependent that is itself waiting in the foreground while one of its own
// dependents waits for it (an ownership cycle) stops blocking its owners first; a group whose
// discovery fails for a while keeps its monitors; a cluster-scoped object naming a namespaced
// owner is left alone; a namespaced object naming an owner that lives in another namespace is
// collected as one whose owner is gone (owners are looked for in the dependent's namespace);
// either mistake is reported (OwnerRefInvalidNamespace) when the owner is found in some
// namespace; failing items are retried until they succeed.
//
// Owners are looked up in the monitors' caches first and confirmed with a live GET before anything
// is deleted, so a cache that has not seen a new owner yet never causes a deletion. A dependent
// kept for an owner only the live GET knows of is looked at again until the owner's monitor sees it
// (or it is gone): until then no deletion event of that owner is sure to come.
package garbagecollector
