// Package admission is the stage between authorization and storage: it may
// change an object about to be created (defaults from LimitRanges, the pod's
// service account, its priority, the default 300 s not-ready/unreachable
// tolerations) and may refuse it (a missing service
// account, Pod Security levels, LimitRange bounds, a RuntimeClass or a pod
// overhead, which no RuntimeClass can back in skiff, ResourceQuota); updates
// pass Pod Security (namespace labels, pod images). Refusals are
// Kubernetes' messages: 403 Forbidden, or 422 for bad pod-security labels
// on a Namespace. Pod Security is k8s.io/pod-security-admission's own
// Admission. As the seeds put it: if the quota is exceeded, the admission
// stage stops the request and nothing reaches storage.
//
// Plugins read the objects they need (namespaces, quotas, limit ranges,
// priority classes, service accounts) from the store; lists there are served
// from memory. The quota plugin charges a quota's status.used with a
// compare-and-swap, so two requests racing for the last unit cannot both
// win; controllers/resourcequota recalculates usage (deletes free quota).
package admission
