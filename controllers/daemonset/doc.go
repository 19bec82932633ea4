// Package daemonset runs one pod of each DaemonSet on every node it fits: the node matches the pod's
// nodeSelector and required node affinity, and the pod tolerates the node's NoSchedule and NoExecute
// taints (daemon pods also get Kubernetes' default daemon tolerations: not-ready, unreachable,
// disk/memory/pid pressure, unschedulable, and network-unavailable for host-network pods).
//
// Pods are created with a required node affinity on metadata.name, so the scheduler binds them to
// their node with every other scheduling rule applied, as in Kubernetes; creations go in slow-start
// batches, at most 250 a sync. A template change rolls out node by node under RollingUpdate, never
// leaving more than maxUnavailable nodes without an available pod, each node's new pod starting
// once its old one is gone — or, with maxSurge, starting up to maxSurge new pods beside old ones
// and removing each old pod once its replacement is available (or at once if it is not ready). An
// old pod on a node that keeps it but would no longer get one (a NoSchedule taint came later) is
// retired, not replaced. OnDelete leaves old pods until someone deletes them. Every template is
// kept as a ControllerRevision (for kubectl rollout history/undo, with the DaemonSet's annotations
// such as kubernetes.io/change-cause) and pods carry its controller-revision-hash.
package daemonset
