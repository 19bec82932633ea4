// Package volumeprotection finishes the deletion of claims and volumes that
// the StorageObjectInUseProtection admission plugin protects, as Kubernetes'
// pvc-protection and pv-protection controllers: a terminating claim keeps
// its kubernetes.io/pvc-protection finalizer while a pod that has not
// finished (phase other than Succeeded/Failed) uses it — checked against the
// cache, then confirmed with a live list so a stale cache never frees a
// claim in use — and a terminating volume keeps kubernetes.io/pv-protection
// while it is Bound.
package volumeprotection
