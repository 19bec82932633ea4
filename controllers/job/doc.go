// Package job runs batch/v1 Jobs to completion: it keeps up to spec.parallelism pods running until
// spec.completions pods have succeeded (or, without completions, until one has and the rest are
// done), gives each pod of an Indexed Job its completion index, replaces failed pods after an
// exponential back-off, and fails the Job when failures exceed spec.backoffLimit or it has run past
// spec.activeDeadlineSeconds. spec.podFailurePolicy rules (exit codes, pod conditions) can fail the
// Job at once (FailJob) or leave a failure uncounted (Ignore); spec.successPolicy can declare an
// Indexed Job complete before every index has; spec.backoffLimitPerIndex gives each index its own
// failure budget and back-off (the count travels on the replacement pod's
// batch.kubernetes.io/job-index-failure-count annotation, failures the policy ignores on
// batch.kubernetes.io/job-index-ignored-failure-count, so a failed pod is kept, uncounted, until
// its index's replacement exists), failed indexes are listed in
// status.failedIndexes and bounded by spec.maxFailedIndexes. Index lists are read and kept as runs
// of indexes ("0-4999999,5000001"), as Kubernetes keeps them: a Job of millions of completions
// costs a sync its runs, not its indexes. As in Kubernetes, the verdict is first
// recorded as FailureTarget or SuccessCriteriaMet; the Failed or Complete condition follows once
// none of the Job's pods runs or terminates any more (pods a failing Job kills count as failed).
// A finished Job is deleted spec.ttlSecondsAfterFinished after its Complete or Failed condition's
// lastTransitionTime (never without one), as Kubernetes' TTL-after-finished controller: the TTL is
// checked again on the Job the API server holds, which alone is deleted (and counted in
// ttl_after_finished_controller_job_deletion_duration_seconds, as Kubernetes). A Job whose
// spec.managedBy names another controller is left to it (no pods, no status), but for that TTL.
//
// Pods are counted as Kubernetes does, without losing any to pod deletion: every pod carries the
// batch.kubernetes.io/job-tracking finalizer; a terminated pod's UID is first recorded in
// status.uncountedTerminatedPods, then its finalizer is removed, and only then is it moved into
// status.succeeded or status.failed. A pod the Job adopts gets the finalizer in the adopting patch,
// so it is counted too. A pod whose Job is gone loses the finalizer at once, and so do the pods
// of a finished Job, which no longer count.
package job
