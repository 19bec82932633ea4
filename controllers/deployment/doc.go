// Package deployment rolls Deployments out through ReplicaSets, the way Kubernetes' deployment
// controller does, so that kubectl rollout status/history/undo/pause/resume/restart behave as on a
// Kubernetes cluster.
//
// Each pod template gets its own ReplicaSet named <deployment>-<pod-template-hash>, where the hash is
// FNV-32a over the template (plus the collision count) encoded with Kubernetes' safe alphabet. The
// ReplicaSet whose template equals the Deployment's is the "new" one; all others are "old". Sync is
// level-based and, per strategy:
//
//   - RollingUpdate scales the new ReplicaSet up while the total stays within replicas+maxSurge, and
//     scales old ones down while availability stays at or above replicas-maxUnavailable.
//   - Recreate scales every old ReplicaSet to zero, waits until their pods are gone, then scales the new
//     one up.
//   - A change of replicas alone (or a paused Deployment) is a scaling event: replicas are spread over
//     the active ReplicaSets in proportion to their size.
//
// Revisions live in the deployment.kubernetes.io/revision annotation of each ReplicaSet and of the
// Deployment; a template that returns to an older ReplicaSet's (kubectl rollout undo) reuses it under a
// new revision. The deprecated.deployment.rollback.to annotation (extensions/v1beta1's rollbackTo;
// 0 is the previous revision) copies that revision's template into the Deployment and is removed,
// with a DeploymentRollback event (or DeploymentRollbackRevisionNotFound /
// DeploymentRollbackTemplateUnchanged when there is nothing to do). Status carries the Available
// condition and, with progressDeadlineSeconds, the Progressing condition with Kubernetes' reasons.
package deployment
