// Package statefulset runs StatefulSets: pods with stable names <set>-<ordinal> (start …
// start+replicas-1, start being spec.ordinals.start, 0 by default), a stable hostname and the
// governing service as subdomain. Under the OrderedReady policy pods start one at a time in ordinal
// order, each waiting for the ones before it to be Running and Ready, and stop one at a time from
// the highest ordinal (one that is not healthy only once it is the lowest such one, as in
// Kubernetes); Parallel starts and stops them all at once. Failed or Succeeded pods are
// deleted and recreated. Only pods named <set>-<digits> are adopted; one the set controls under
// another name is released. Under minReadySeconds a pod counts (availableReplicas, and for the
// ordering) once Ready for that long; while some are not yet, the set is looked at again after
// minReadySeconds.
//
// Templates are kept as ControllerRevisions (status.currentRevision / updateRevision, the pods'
// controller-revision-hash); revisions matching the selector with no controller (left by a set
// deleted with --cascade=orphan and made again) are adopted, and a new one carries the set's
// annotations (kubernetes.io/change-cause for kubectl rollout history). RollingUpdate replaces pods
// from the highest ordinal down to spec.updateStrategy.rollingUpdate.partition (counted from the
// start ordinal), one at a time, each once the pods above it are updated and healthy; ordinals below
// the partition keep (and are recreated at) the current revision. rollingUpdate.maxUnavailable is
// ignored, as in Kubernetes 1.33 (MaxUnavailableStatefulSet alpha, off). OnDelete leaves old pods
// until someone deletes them. A set being deleted gets no new or removed pods, but its status goes
// on counting them.
//
// volumeClaimTemplates: before a pod is created, each template's claim <template>-<set>-<ordinal>
// is created if missing (labelled with the selector) and the pod's volume of the template's name
// points at it; a claim still being deleted, or (whenScaled Delete) still owned by an earlier pod of
// the same name, makes the pod wait. persistentVolumeClaimRetentionPolicy:
// whenDeleted Delete makes the set the claims' owner (the garbage collector removes them with the
// set); whenScaled Delete makes a condemned pod (ordinal outside the range) their owner before it is
// deleted; Retain (the default) leaves claims to outlive pods and set.
package statefulset
