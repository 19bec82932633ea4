// Package legacytokencleaner retires the Secret-based service account
// tokens nobody uses, as Kubernetes' legacy-serviceaccount-token-cleaner
// (LegacyServiceAccountTokenCleanUp): once a day it looks at every Secret
// of type kubernetes.io/service-account-token that its service account
// lists in .secrets (an auto-generated token, in Kubernetes before 1.24),
// that was created longer than the clean-up period ago, and that no pod of
// its namespace refers to. If the Secret's kubernetes.io/legacy-token-last-used
// label (which the API server writes when the token is used) is older than
// the period, or there is no such label, the Secret is labelled
// kubernetes.io/legacy-token-invalid-since with today's date, and the API
// server refuses its token from then on; one labelled invalid for longer
// than the period is deleted. Removing the label gives the token another
// period.
//
// A Secret without a last-used label counts as unused since the day the
// API server began tracking, the since date of the ConfigMap
// kube-system/kube-apiserver-legacy-service-account-token-tracking: until a
// whole period has passed after that day, or while the ConfigMap is missing
// or unreadable, nothing is touched.
package legacytokencleaner
