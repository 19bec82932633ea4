// Package controllerref implements the ownership rules shared by controllers that manage other objects
// (ReplicaSets own pods, Deployments own ReplicaSets): find an object's controlling owner, adopt orphans
// whose labels match the selector, and release owned objects whose labels no longer match.
// Selecting finds the owners that may adopt an orphan, the ones its appearance or change wakes.
//
// Ownership changes are JSON merge patches of metadata.ownerReferences carrying the object's uid and
// resourceVersion, so a concurrent change to the object makes the patch fail with a conflict instead of
// silently overwriting another owner. An adopting patch can also add finalizers (Claimer.Finalizers;
// the Job controller's tracking finalizer).
package controllerref
