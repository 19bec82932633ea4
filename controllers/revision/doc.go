// Package revision keeps the ControllerRevisions of a workload that rolls pods out by template
// (DaemonSet, StatefulSet): one revision per distinct pod template, found by its data and named
// <owner>-<hash> when made, numbered so the newest template has the highest revision (a template
// rolled back to keeps its revision, renumbered), pruned beyond the owner's history limit when no pod
// runs it. A revision's data is the template as a strategic merge patch that replaces it, which is
// what `kubectl rollout undo` applies back to the owner. A new revision also carries the owner's
// annotations (its kubernetes.io/change-cause is what `kubectl rollout history`
// shows). Claim adopts orphaned revisions, so an owner re-made after --cascade=orphan takes its
// history back.
package revision
