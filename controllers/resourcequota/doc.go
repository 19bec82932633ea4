// Package resourcequota keeps every ResourceQuota's status current:
// status.hard from spec.hard, status.used recalculated from the objects in
// its namespace whenever one of them changes (and every 30 seconds). The
// API server's admission charges status.used as objects are created; this
// controller is what gives quota back when they are deleted or finish, and
// corrects any charge whose write then failed. Claims count
// persistentvolumeclaims, requests.storage and the per-class
// <class>.storageclass.storage.k8s.io/ resources (admission.Usage).
//
// Counts of other kinds (count/<resource>.<group>) are listed through the
// metadata client; the first time a quota counts a kind, its deletes start
// to recount the namespace's quotas: through the informer another loop of
// the process runs for it (Options.Shared), or else a metadata informer of
// its own (custom resources). That informer stops when its kind is no
// longer served (its CRD deleted: its list answers 404 and discovery agrees)
// and starts again when a count finds the kind served again. A
// kind the cluster does not serve is left at its last value, as Kubernetes,
// which has no evaluator for it, leaves it; a count that fails keeps its
// last value while the others are written, and the quota is tried again.
// Events are outside quota, as in Kubernetes (admission.QuotaIgnores), and
// so are kinds served cluster-wide (its quota monitor discovers namespaced
// kinds only): counts of them stay out of status.used.
package resourcequota
