// Package metrics holds the scheduler's Prometheus metrics, with
// kube-scheduler's names so that its dashboards and alerts read them:
// scheduler_schedule_attempts_total and
// scheduler_scheduling_attempt_duration_seconds by result (scheduled,
// unschedulable, error) and profile, scheduler_pending_pods by queue
// (active, backoff, unschedulable, gated),
// scheduler_preemption_attempts_total, scheduler_preemption_victims (the
// pods each preemption evicted), and, for asynchronous preemption's
// goroutines, scheduler_preemption_goroutines_execution_total and
// scheduler_preemption_goroutines_duration_seconds by result (success,
// error).
//
// One Metrics outlives the schedulers built over it (a process builds a
// new one each leadership term), so the server registers it once; the
// pending-pods gauge reads whichever scheduler's queue was attached last.
package metrics
