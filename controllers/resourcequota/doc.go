// Package resourcequota keeps every ResourceQuota's status current:
// status.hard from spec.hard, status.used recalculated from the objects in
// its namespace whenever one of them changes (and every 30 seconds). The
// API server's admission charges status.used as objects are created; this
// controller is what gives quota back when they are deleted or finish, and
// corrects any charge whose write then failed. Claims count
// persistentvolumeclaims, requests.storage and the per-class
// <class>.storageclass.storage.k8s.io/ resources (admission.Usage).
package resourcequota
