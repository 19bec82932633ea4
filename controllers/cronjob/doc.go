// Package cronjob creates Jobs from CronJobs on their schedule: standard cron syntax and
// descriptors (@hourly …) parsed by robfig/cron, evaluated in spec.timeZone (default: the
// controller's local time zone, as Kubernetes). At each sync the most recent missed schedule time is
// run — unless it is older than startingDeadlineSeconds — under the concurrency policy (Allow,
// Forbid: skip while a Job runs, Replace: delete the running Jobs first). Jobs are named
// <cronjob>-<minutes since the epoch> so a schedule time never runs twice. Finished Jobs beyond
// successfulJobsHistoryLimit / failedJobsHistoryLimit are deleted oldest first; status.active,
// lastScheduleTime and lastSuccessfulTime follow the Jobs. A suspended CronJob schedules nothing.
// A CronJob is woken 100ms after its next schedule time, counted on from its last schedule time
// (so "@every" schedules keep their rhythm); an edit of its schedule or time zone waits for that
// time of the new schedule, as Kubernetes, rather than syncing at once.
package cronjob
