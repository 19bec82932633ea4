// Package statefulset runs StatefulSets: pods with stable names <set>-<ordinal> (0 … replicas-1),
// a stable hostname and the governing service as subdomain. Under the OrderedReady policy pods start
// one at a time in ordinal order, each waiting for the ones before it to be Running and Ready, and
// stop one at a time from the highest ordinal; Parallel starts and stops them all at once.
//
// Templates are kept as ControllerRevisions (status.currentRevision / updateRevision, the pods'
// controller-revision-hash). RollingUpdate replaces pods from the highest ordinal down to
// spec.updateStrategy.rollingUpdate.partition, one at a time, each after the set is healthy again;
// ordinals below the partition keep (and are recreated at) the current revision. OnDelete leaves
// old pods until someone deletes them.
//
// volumeClaimTemplates are not acted on: this API server does not serve persistentvolumeclaims, so
// the controller records a warning event instead of creating claims.
package statefulset
