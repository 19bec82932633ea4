package cronjob

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/skiffkube/skiff/controllers/controllerref"
)

// Event reasons, as Kubernetes'.
const (
	ReasonSuccessfulCreate   = "SuccessfulCreate"
	ReasonFailedCreate       = "FailedCreate"
	ReasonSuccessfulDelete   = "SuccessfulDelete"
	ReasonFailedDelete       = "FailedDelete"
	ReasonFailedGet          = "FailedGet"
	ReasonSawCompletedJob    = "SawCompletedJob"
	ReasonMissSchedule       = "MissSchedule"
	ReasonTooManyMissedTimes = "TooManyMissedTimes"
	ReasonJobAlreadyActive   = "JobAlreadyActive"
	ReasonUnparseableSched   = "UnparseableSchedule"
	ReasonUnknownTimeZone    = "UnknownTimeZone"
	ReasonUnsupportedSched   = "UnsupportedSchedule"
	ReasonInvalidSched       = "InvalidSchedule"
	ReasonMissingJob         = "MissingJob"
	ReasonUnexpectedJob      = "UnexpectedJob"
)

// Default history limits of batch/v1.
const (
	defaultSuccessfulHistory = 3
	defaultFailedHistory     = 1
	// tooManyMissed is when Kubernetes warns that start times were missed (controller down,
	// clock jump) and only the latest is run.
	tooManyMissed = 100
	// nextScheduleDelta: a CronJob is woken a little after its schedule time, as Kubernetes
	// does, so the clock has surely passed it.
	nextScheduleDelta = 100 * time.Millisecond
)

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.cjLister.CronJobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	cj := cached.DeepCopy()
	now := c.now()
	jobs, err := c.ownedJobs(cj)
	if err != nil {
		return err
	}
	// History first, as Kubernetes: a listed Job it deletes leaves the list unreported
	// (no SawCompletedJob), and one it cannot delete is retried without holding back the
	// schedule.
	deleted, cleanupErr := c.cleanupHistory(ctx, cj, jobs)
	unlist := func(st *batchv1.CronJobStatus) {
		st.Active = slices.DeleteFunc(st.Active, func(ref corev1.ObjectReference) bool { return deleted[ref.UID] })
	}
	st := cj.Status.DeepCopy()
	unlist(st)
	fresh, err := c.reconcileActive(ctx, cj, st, jobs, nil)
	if err != nil {
		return errors.Join(cleanupErr, err)
	}
	if fresh != nil {
		// The cache lags this controller's own status write (a sync woken by the Job it just
		// made): go on from the stored CronJob, as Kubernetes does, lest its stale
		// lastScheduleTime run that schedule time again (Replace deleting the new Job).
		cj, st = fresh, fresh.Status.DeepCopy()
		unlist(st)
		if _, err := c.reconcileActive(ctx, cj, st, jobs, cj); err != nil {
			return errors.Join(cleanupErr, err)
		}
	}
	var next time.Time
	var runErr error
	if cj.DeletionTimestamp == nil {
		next, runErr = c.schedule(ctx, cj, st, now)
	}
	if err := c.updateStatus(ctx, cj, st); err != nil {
		return errors.Join(cleanupErr, err)
	}
	if !next.IsZero() {
		c.queue.AddAfter(key, next.Sub(now)+nextScheduleDelta)
	}
	return errors.Join(cleanupErr, runErr)
}

func (c *Controller) ownedJobs(cj *batchv1.CronJob) ([]*batchv1.Job, error) {
	all, err := c.jobLister.Jobs(cj.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []*batchv1.Job
	for _, j := range all {
		if ref := metav1.GetControllerOf(j); ref != nil && ref.UID == cj.UID {
			out = append(out, j)
		}
	}
	return out, nil
}

// finished returns whether a Job has a true Complete or Failed condition, and which.
func finished(j *batchv1.Job) (bool, batchv1.JobConditionType) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true, c.Type
		}
	}
	return false, ""
}

// reconcileActive makes status.active the owned Jobs still running; completions update
// lastSuccessfulTime. stored is the CronJob as the API server has it, nil to read it when
// needed; when a running Job the cache's status lacks is listed there, the cache is stale and
// that stored CronJob is returned, before anything is told, for the caller to start again from.
func (c *Controller) reconcileActive(ctx context.Context, cj *batchv1.CronJob, st *batchv1.CronJobStatus, jobs []*batchv1.Job, stored *batchv1.CronJob) (*batchv1.CronJob, error) {
	listed := func(refs []corev1.ObjectReference, j *batchv1.Job) bool {
		return slices.ContainsFunc(refs, func(ref corev1.ObjectReference) bool { return ref.UID == j.UID })
	}
	// Running Jobs we own but did not list. The cached CronJob may predate this controller's
	// own status write: a Job the stored status lists means starting again from that. Any
	// other (one made by hand, as "kubectl create job --from=cronjob/..." does) is only
	// warned about, as Kubernetes does: it is not listed, so Forbid does not wait for it nor
	// Replace delete it. A Job whose status write was lost is found again when its schedule
	// time is retried.
	fetched := stored == nil
	var unexpected []*batchv1.Job
	for _, j := range jobs {
		if done, _ := finished(j); done || j.DeletionTimestamp != nil || listed(st.Active, j) {
			continue
		}
		if stored == nil {
			got, err := c.client.BatchV1().CronJobs(cj.Namespace).Get(ctx, cj.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("get cronjob %s/%s: %w", cj.Namespace, cj.Name, err)
			}
			stored = got
		}
		if fetched && listed(stored.Status.Active, j) {
			return stored, nil
		}
		unexpected = append(unexpected, j)
	}

	byUID := map[string]*batchv1.Job{}
	for _, j := range jobs {
		byUID[string(j.UID)] = j
	}
	var active []corev1.ObjectReference
	for _, ref := range st.Active {
		j, ok := byUID[string(ref.UID)]
		if !ok {
			// Not in the cache: asked of the API server, since a Job created a moment ago may
			// not have reached the informer yet.
			got, err := c.client.BatchV1().Jobs(cj.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err) || (err == nil && got.UID != ref.UID):
				c.recorder.Eventf(cj, corev1.EventTypeNormal, ReasonMissingJob, "Active job went missing: %v", ref.Name)
			case err != nil:
				return nil, fmt.Errorf("get active job %s/%s: %w", cj.Namespace, ref.Name, err)
			default:
				active = append(active, ref)
			}
			continue
		}
		if done, how := finished(j); done {
			c.recorder.Eventf(cj, corev1.EventTypeNormal, ReasonSawCompletedJob, "Saw completed job: %s, condition: %s", j.Name, how)
			continue
		}
		active = append(active, ref)
	}
	for _, j := range unexpected {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, ReasonUnexpectedJob, "Saw a job that the controller did not create or forgot: %s", j.Name)
	}
	// In the order listed, new Jobs last, as v1.33 keeps it: not sorted, so that a list
	// in another order is not rewritten.
	st.Active = active
	for _, j := range jobs {
		if j.Status.CompletionTime != nil {
			if done, how := finished(j); done && how == batchv1.JobComplete &&
				(st.LastSuccessfulTime == nil || st.LastSuccessfulTime.Before(j.Status.CompletionTime)) {
				t := *j.Status.CompletionTime
				st.LastSuccessfulTime = &t
			}
		}
	}
	return nil, nil
}

func jobRef(j *batchv1.Job) corev1.ObjectReference {
	return corev1.ObjectReference{
		APIVersion: "batch/v1", Kind: "Job", Namespace: j.Namespace, Name: j.Name, UID: j.UID, ResourceVersion: j.ResourceVersion,
	}
}

// cleanupHistory deletes the oldest finished Jobs beyond the history limits, and returns those
// it deleted; each delete is told as v1.33's deleteJob does (SuccessfulDelete, or FailedDelete
// for a failure, a Job already gone too). A Conflict of the UID precondition (another Job has
// taken the name) counts as deleted, untold: v1.33 sends no precondition and knows no such case.
// As v1.33's cleanupFinishedJobs, a finished Job already being deleted (a foreground
// deletion, a finalizer) still counts toward its limit until it is gone, so a newer one is not
// kept in its place. Unlike v1.33, which deletes such a Job again at every sync (and tells each
// time), it is not deleted again.
func (c *Controller) cleanupHistory(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) (map[types.UID]bool, error) {
	var succeeded, failed []*batchv1.Job
	for _, j := range jobs {
		switch done, how := finished(j); {
		case done && how == batchv1.JobComplete:
			succeeded = append(succeeded, j)
		case done:
			failed = append(failed, j)
		}
	}
	limit := func(p *int32, def int32) int {
		if p == nil {
			return int(def)
		}
		return int(*p)
	}
	var errs []error
	deleted := map[types.UID]bool{}
	for _, group := range []struct {
		jobs  []*batchv1.Job
		limit int
	}{{succeeded, limit(cj.Spec.SuccessfulJobsHistoryLimit, defaultSuccessfulHistory)}, {failed, limit(cj.Spec.FailedJobsHistoryLimit, defaultFailedHistory)}} {
		if len(group.jobs) <= group.limit {
			continue
		}
		sort.Slice(group.jobs, func(i, k int) bool { return startedBefore(group.jobs[i], group.jobs[k]) })
		for _, j := range group.jobs[:len(group.jobs)-group.limit] {
			if j.DeletionTimestamp != nil {
				continue
			}
			switch err := c.deleteJob(ctx, cj, j.Name, j.UID); {
			case apierrors.IsNotFound(err):
				// Gone already (the cache lags its deletion): v1.33's deleteJob tells it as any
				// failed delete and leaves the Job listed. Nothing to retry: its deletion
				// wakes the CronJob.
				c.recorder.Eventf(cj, corev1.EventTypeWarning, ReasonFailedDelete, "Deleted job: %v", err)
			case err != nil:
				errs = append(errs, err)
			default:
				deleted[j.UID] = true
			}
		}
	}
	return deleted, errors.Join(errs...)
}

// startedBefore orders Jobs oldest first as Kubernetes' history cleanup does: by status.startTime,
// a Job that never started counting as the newest, equal times by name.
func startedBefore(a, b *batchv1.Job) bool {
	switch sa, sb := a.Status.StartTime, b.Status.StartTime; {
	case sa == nil || sb == nil:
		return sa != nil && sb == nil || sa == nil && sb == nil && a.Name < b.Name
	case sa.Equal(sb):
		return a.Name < b.Name
	default:
		return sa.Before(sb)
	}
}

// deleteJob deletes the Job of that name if it is still the one with that UID, with its pods in
// the background. A failure is told on the CronJob, as Kubernetes does. A Job of that name that is
// no longer that one (the UID precondition fails) is left alone and counts as deleted; a Job not
// found is returned untold, as NotFound, for the caller to judge.
func (c *Controller) deleteJob(ctx context.Context, cj *batchv1.CronJob, name string, uid types.UID) error {
	policy := metav1.DeletePropagationBackground
	err := c.client.BatchV1().Jobs(cj.Namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) {
		return err
	}
	if apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, ReasonFailedDelete, "Deleted job: %v", err)
		return fmt.Errorf("delete job %s/%s: %w", cj.Namespace, name, err)
	}
	c.recorder.Eventf(cj, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted job %s", name)
	return nil
}

// parseSchedule reads spec.schedule in spec.timeZone. As in Kubernetes, a schedule that carries its
// own TZ= or CRON_TZ= prefix is used as written (with a warning: it is not officially supported), and
// the timeZone field is then not applied.
func (c *Controller) parseSchedule(cj *batchv1.CronJob) (cron.Schedule, error) {
	if strings.Contains(cj.Spec.Schedule, "TZ") {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, ReasonUnsupportedSched,
			"CRON_TZ or TZ used in schedule %q is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details", cj.Spec.Schedule)
	}
	return scheduleOf(cj)
}

// scheduleOf is parseSchedule without the warning.
func scheduleOf(cj *batchv1.CronJob) (cron.Schedule, error) {
	spec := cj.Spec.Schedule
	switch {
	case strings.Contains(spec, "TZ"):
	case cj.Spec.TimeZone != nil:
		if _, err := time.LoadLocation(*cj.Spec.TimeZone); err != nil {
			return nil, fmt.Errorf("%w: %q: %v", errTimeZone, *cj.Spec.TimeZone, err)
		}
		spec = "TZ=" + *cj.Spec.TimeZone + " " + spec
	}
	sched, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("unparseable schedule: %q : %v", cj.Spec.Schedule, err)
	}
	return sched, nil
}

var (
	errTimeZone   = errors.New("invalid timeZone")
	errNoInterval = errors.New("time difference between two schedules is less than 1 second")
)

// mostRecentDue returns the latest schedule time after earliest and not after now (zero if none),
// and roughly how many schedule times that span holds. Like Kubernetes it estimates the count from
// the interval between the first two times rather than walking them all: after a long outage, or
// with a clock off by years, walking every minute of a "* * * * *" schedule would take the
// controller's CPU for a long while.
func mostRecentDue(sched cron.Schedule, earliest, now time.Time) (time.Time, int64, error) {
	t1 := sched.Next(earliest)
	if t1.IsZero() {
		// A schedule that parses but never fires ("0 0 30 2 *"): Kubernetes finds no interval
		// between its first two times and calls it invalid, in these words.
		return time.Time{}, 0, errNoInterval
	}
	if t1.After(now) {
		return time.Time{}, 0, nil
	}
	t2 := sched.Next(t1)
	if t2.IsZero() || t2.After(now) {
		return t1, 1, nil
	}
	interval := t2.Sub(t1).Round(time.Second)
	if interval < time.Second {
		return time.Time{}, 0, errNoInterval
	}
	missed := int64(now.Sub(t1)/interval) + 1
	// Walk from a little before the estimated latest time; an irregular schedule (weekdays only,
	// say) can put it further back, so step back further until a time is found.
	for back := int64(2); ; back *= 2 {
		from := t1.Add(time.Duration(missed-back) * interval)
		if from.Before(earliest) {
			from = earliest
		}
		var due time.Time
		for t := sched.Next(from); !t.IsZero() && !t.After(now); t = sched.Next(t) {
			due = t
		}
		if !due.IsZero() || !from.After(earliest) {
			return due, missed, nil
		}
	}
}

// countFrom is the time schedule times are counted from: the last one run, else the creation.
func countFrom(cj *batchv1.CronJob, st *batchv1.CronJobStatus) time.Time {
	if st.LastScheduleTime != nil {
		return st.LastScheduleTime.Time
	}
	return cj.CreationTimestamp.Time
}

// wakeAt returns the first schedule time after now, counted as Kubernetes counts it: on from the
// latest time due since earliest (the last schedule time, else the creation), not from now. The two
// agree for calendar schedules, but an "@every" schedule's times run from the last start: one whose
// queued wake-up was lost (a restart, a new leader) or that was woken by an edit or a Job's change
// must still fire at last+interval, not at now+interval.
func wakeAt(sched cron.Schedule, earliest, now time.Time) time.Time {
	due, _, err := mostRecentDue(sched, earliest, now)
	switch {
	case err != nil:
		return sched.Next(now)
	case due.IsZero():
		return sched.Next(earliest) // after now, or zero for a schedule that never fires
	default:
		return sched.Next(due)
	}
}

// schedule starts the Job of the most recent schedule time that is due, if the policies allow, and
// returns the next schedule time.
func (c *Controller) schedule(ctx context.Context, cj *batchv1.CronJob, st *batchv1.CronJobStatus, now time.Time) (time.Time, error) {
	if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
		// Kubernetes still reports an unknown time zone of a suspended CronJob.
		if tz := cj.Spec.TimeZone; tz != nil {
			if _, err := time.LoadLocation(*tz); err != nil {
				c.recorder.Eventf(cj, corev1.EventTypeWarning, ReasonUnknownTimeZone, "invalid timeZone: %q: %v", *tz, err)
			}
		}
		return time.Time{}, nil
	}
	sched, err := c.parseSchedule(cj)
	if err != nil {
		reason := ReasonUnparseableSched
		if errors.Is(err, errTimeZone) {
			reason = ReasonUnknownTimeZone
		}
		c.recorder.Event(cj, corev1.EventTypeWarning, reason, err.Error())
		return time.Time{}, nil // an edit of the CronJob wakes us
	}
	earliest := countFrom(cj, st)
	next := wakeAt(sched, earliest, now) // zero for a schedule that never fires: then no wake-up
	if d := cj.Spec.StartingDeadlineSeconds; d != nil {
		if w := now.Add(-time.Duration(*d) * time.Second); w.After(earliest) {
			earliest = w
		}
	}
	due, missed, err := mostRecentDue(sched, earliest, now)
	if err != nil {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, ReasonInvalidSched, "invalid schedule: %s : %v", cj.Spec.Schedule, err)
		return time.Time{}, nil
	}
	if due.IsZero() {
		return next, nil
	}
	if missed > tooManyMissed {
		c.recorder.Event(cj, corev1.EventTypeWarning, ReasonTooManyMissedTimes,
			"too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && due.Add(time.Duration(*d)*time.Second).Before(now) {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, ReasonMissSchedule, "Missed scheduled time to start a job: %s", due.UTC().Format(time.RFC1123Z))
		return next, nil
	}
	switch {
	case cj.Spec.ConcurrencyPolicy == batchv1.ForbidConcurrent && len(st.Active) > 0:
		c.recorder.Eventf(cj, corev1.EventTypeNormal, ReasonJobAlreadyActive, "Not starting job because prior execution is running and concurrency policy is Forbid")
		return next, nil
	case cj.Spec.ConcurrencyPolicy == batchv1.ReplaceConcurrent:
		// Every Job the status lists, those the cache has not seen yet too (the UID
		// precondition makes sure it is that Job). Kubernetes creates no replacement
		// while one of them cannot be deleted.
		for len(st.Active) > 0 {
			ref := st.Active[0]
			if err := c.deleteJob(ctx, cj, ref.Name, ref.UID); err != nil {
				// Gone from the API server though the cache still has it: Kubernetes, which
				// looks the Job up first, warns that it could not get it and starts nothing
				// this pass; the next finds the Job missing (MissingJob) and goes on.
				if apierrors.IsNotFound(err) {
					c.recorder.Eventf(cj, corev1.EventTypeWarning, ReasonFailedGet, "Get job: %v", err)
				}
				return next, err
			}
			st.Active = st.Active[1:]
		}
	}
	job, err := c.createJob(ctx, cj, due)
	if err != nil || job == nil {
		return next, err
	}
	found := false
	for _, ref := range st.Active {
		found = found || ref.UID == job.UID
	}
	if !found {
		st.Active = append(st.Active, jobRef(job))
	}
	t := metav1.NewTime(due)
	st.LastScheduleTime = &t
	return next, nil
}

// jobName is <cronjob>-<minutes since the epoch of the schedule time>, as Kubernetes names them.
func jobName(cj *batchv1.CronJob, at time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, at.Unix()/60)
}

func (c *Controller) createJob(ctx context.Context, cj *batchv1.CronJob, at time.Time) (*batchv1.Job, error) {
	tmpl := cj.Spec.JobTemplate.DeepCopy()
	annotations := map[string]string{}
	for k, v := range tmpl.Annotations {
		annotations[k] = v
	}
	// In the CronJob's time zone, as Kubernetes writes it (UTC without one).
	loc := time.UTC
	if cj.Spec.TimeZone != nil {
		if l, err := time.LoadLocation(*cj.Spec.TimeZone); err == nil {
			loc = l
		}
	}
	annotations[batchv1.CronJobScheduledTimestampAnnotation] = at.In(loc).Format(time.RFC3339)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: jobName(cj, at), Namespace: cj.Namespace,
			Labels: tmpl.Labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{controllerref.New(cj, controllerKind)},
		},
		Spec: tmpl.Spec,
	}
	created, err := c.client.BatchV1().Jobs(cj.Namespace).Create(ctx, job, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, gerr := c.client.BatchV1().Jobs(cj.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if gerr != nil {
			return nil, gerr
		}
		if ref := metav1.GetControllerOf(existing); ref == nil || ref.UID != cj.UID {
			// Someone else's Job has the name. As v1.33: no event and no retry, since
			// another actor is assumed to keep that Job, and the schedule time is not
			// recorded. Unlike v1.33, which then queues nothing, the caller still
			// wakes at the next schedule time, which gets a name of its own.
			return nil, nil
		}
		// Created by an earlier sync whose status write was lost: the schedule time has run.
		return existing, nil
	}
	if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil, nil
		}
		c.recorder.Eventf(cj, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating job: %v", err)
		return nil, fmt.Errorf("create job for cronjob %s/%s: %w", cj.Namespace, cj.Name, err)
	}
	c.recorder.Eventf(cj, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created job %s", created.Name)
	// Only a Job this call created: one found already there was measured when it was made.
	observeCreationSkew(created.CreationTimestamp.Time, at)
	return created, nil
}

func (c *Controller) updateStatus(ctx context.Context, cj *batchv1.CronJob, st *batchv1.CronJobStatus) error {
	if apiequality.Semantic.DeepEqual(&cj.Status, st) {
		return nil
	}
	next := cj.DeepCopy()
	next.Status = *st
	_, err := c.client.BatchV1().CronJobs(cj.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("update status of cronjob %s/%s: %w", cj.Namespace, cj.Name, err)
	}
	return nil
}
