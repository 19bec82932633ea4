package cronjob

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/controllers/controllertest"
	"github.com/skiffkube/skiff/controllers/runner"
)

// Behaviours checked against kube-controller-manager's CronJob controller
// (pkg/controller/cronjob).

// The scheduled-timestamp annotation is written in the CronJob's time zone.
func TestScheduledTimestampAnnotationIsInTheTimeZone(t *testing.T) {
	tz := "Asia/Tokyo"
	saved := now
	now = time.Date(2026, 3, 1, 0, 0, 30, 0, time.UTC)
	defer func() { now = saved }()
	fx := newFixture(t, newCronJob("0 9 * * *", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = &tz }))
	fx.sync(t)
	jobs := fx.created()
	if len(jobs) != 1 {
		t.Fatalf("created %d jobs", len(jobs))
	}
	if got := jobs[0].Annotations[batchv1.CronJobScheduledTimestampAnnotation]; got != "2026-03-01T09:00:00+09:00" {
		t.Errorf("scheduled timestamp = %q, want 2026-03-01T09:00:00+09:00", got)
	}
	if want := fmt.Sprintf("tick-%d", now.Add(-30*time.Second).Unix()/60); jobs[0].Name != want {
		t.Errorf("job name %s, want %s", jobs[0].Name, want)
	}
}

// A CronJob whose last schedule is ages ago (a controller down, a clock off by
// decades) warns of too many missed start times and runs the latest one; the
// missed times are estimated, not walked one by one.
func TestTooManyMissedStartTimes(t *testing.T) {
	fx := newFixture(t, newCronJob("* * * * *", func(cj *batchv1.CronJob) {
		cj.CreationTimestamp = metav1.NewTime(now.AddDate(-50, 0, 0))
	}))
	start := time.Now()
	fx.sync(t)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a sync took %s", d)
	}
	if !strings.Contains(fx.events(), "Warning TooManyMissedTimes too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew") {
		t.Errorf("events: %s", fx.events())
	}
	jobs := fx.created()
	due := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if len(jobs) != 1 || jobs[0].Name != fmt.Sprintf("tick-%d", due.Unix()/60) {
		t.Fatalf("jobs: %v", jobs)
	}
}

// TZ= or CRON_TZ= in the schedule is not officially supported: Kubernetes warns
// with an UnsupportedSchedule event and uses the schedule as written (the
// timeZone field is then not applied).
func TestTZInScheduleWarnsAndIsUsedAsWritten(t *testing.T) {
	tz := "Asia/Tokyo"
	saved := now
	now = time.Date(2026, 3, 1, 9, 0, 30, 0, time.UTC)
	defer func() { now = saved }()
	fx := newFixture(t, newCronJob("CRON_TZ=UTC 0 9 * * *", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = &tz }))
	fx.sync(t)
	if !strings.Contains(fx.events(), "Warning UnsupportedSchedule CRON_TZ or TZ used in schedule") {
		t.Errorf("events: %s", fx.events())
	}
	if jobs := fx.created(); len(jobs) != 1 {
		t.Fatalf("created %d jobs, want the 09:00 UTC one", len(jobs))
	}
}

// mostRecentDue agrees with walking every schedule time, irregular schedules included.
func TestMostRecentDueMatchesAWalk(t *testing.T) {
	earliest := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, spec := range []string{"* * * * *", "*/7 * * * *", "0 9 * * 1-5", "30 6-16/4 * * 1-5", "@every 1h30m", "0 0 1 * *", "0 0 29 2 *"} {
		sched, err := cron.ParseStandard(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, span := range []time.Duration{30 * time.Second, time.Hour, 50 * time.Hour, 9 * 24 * time.Hour, 60 * 24 * time.Hour} {
			now := earliest.Add(span)
			var want time.Time
			for at := sched.Next(earliest); !at.IsZero() && !at.After(now); at = sched.Next(at) {
				want = at
			}
			got, _, err := mostRecentDue(sched, earliest, now)
			if err != nil || !got.Equal(want) {
				t.Errorf("%q over %s: got %s (%v), want %s", spec, span, got, err, want)
			}
		}
	}
}

// An active Job that is gone from the cache and from the API server leaves
// status.active with a MissingJob event; one the cache has not seen yet but
// the API server has stays. A running Job the CronJob controls but never
// listed gets an UnexpectedJob warning and stays unlisted, unless the stored
// status (newer than the cache) lists it: then it is active, unwarned.
func TestActiveJobsMissingFromTheCacheOrUnlisted(t *testing.T) {
	gone := ownedJob("tick-gone", now.Add(-time.Minute))
	fresh := ownedJob("tick-fresh", now.Add(-time.Second))
	stray := ownedJob("tick-stray", now.Add(-2*time.Minute))
	cj := newCronJob("0 0 1 1 *", withActive(gone), withActive(fresh))
	fx := newFixture(t, cj, stray)
	if _, err := fx.client.BatchV1().Jobs("ns").Create(context.Background(), fresh, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fx.sync(t)
	var active []string
	for _, ref := range fx.status(t).Active {
		active = append(active, ref.Name)
	}
	if !slices.Equal(active, []string{"tick-fresh"}) {
		t.Errorf("active %v, want the job only the API server has", active)
	}
	events := fx.events()
	for _, want := range []string{"Normal MissingJob Active job went missing: tick-gone",
		"Warning UnexpectedJob Saw a job that the controller did not create or forgot: tick-stray"} {
		if !strings.Contains(events, want) {
			t.Errorf("events lack %q:\n%s", want, events)
		}
	}
	if strings.Contains(events, "tick-fresh") {
		t.Errorf("the job the cache has not seen yet was reported:\n%s", events)
	}

	// The cache lags the controller's own status write: no warning.
	listed := newCronJob("0 0 1 1 *", withActive(stray))
	cached := newCronJob("0 0 1 1 *")
	fx = newFixture(t, cached, stray)
	if _, err := fx.client.BatchV1().CronJobs("ns").UpdateStatus(context.Background(), listed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fx.sync(t)
	if events := fx.events(); strings.Contains(events, ReasonUnexpectedJob) {
		t.Errorf("a job the stored status lists was called unexpected:\n%s", events)
	}
	if st := fx.status(t); len(st.Active) != 1 || st.Active[0].Name != stray.Name {
		t.Errorf("active %+v, want the job the stored status lists", st.Active)
	}
}

type afterQueue struct {
	runner.Queue
	after []time.Duration
}

func (q *afterQueue) AddAfter(_ string, d time.Duration) { q.after = append(q.after, d) }

// The next wake-up is counted from the last schedule time (or the creation),
// as Kubernetes does since its fix for "@every" schedules: an "@every 1h"
// CronJob last run at 11:30:30 wakes at 12:30:30 however late (a restart, an
// edit, a Job's change) its sync at 12:00:30 ran, not at 13:00:30.
func TestEveryScheduleWakesAfterTheLastScheduleTime(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []cjOpt
		want time.Duration
	}{
		{"since the last schedule time", []cjOpt{lastScheduled(now.Add(-30 * time.Minute))}, 30 * time.Minute},
		{"since the creation", nil, 50 * time.Minute},
		{"after a late start", []cjOpt{lastScheduled(now.Add(-90 * time.Minute))}, 30 * time.Minute},
		{"calendar schedule", []cjOpt{func(cj *batchv1.CronJob) { cj.Spec.Schedule = "0 * * * *" }}, 59*time.Minute + 30*time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, newCronJob("@every 1h", tc.opts...))
			q := &afterQueue{Queue: fx.c.queue}
			fx.c.queue = q
			fx.sync(t)
			if want := []time.Duration{tc.want + 100*time.Millisecond}; !slices.Equal(q.after, want) {
				t.Errorf("requeued after %v, want %v", q.after, want)
			}
		})
	}
}

// Replace deletes every Job status.active lists, one the informer has not
// seen yet too (Kubernetes looks each up on the API server), before it
// starts the next. A Job that cannot be deleted is told with a FailedDelete
// warning, and no replacement is started beside it.
func TestReplaceDeletesEveryActiveJob(t *testing.T) {
	fresh := ownedJob("tick-fresh", now.Add(-5*time.Minute))
	fx := newFixture(t, newCronJob("*/5 * * * *", policy(batchv1.ReplaceConcurrent), withActive(fresh)))
	if _, err := fx.client.BatchV1().Jobs("ns").Create(context.Background(), fresh, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fx.client.ClearActions()
	fx.sync(t)
	if !slices.Equal(fx.deleted(), []string{"tick-fresh"}) || len(fx.created()) != 1 {
		t.Fatalf("deleted %v, created %d: want the active job the cache lacks replaced", fx.deleted(), len(fx.created()))
	}
	if st := fx.status(t); len(st.Active) != 1 || st.Active[0].Name == "tick-fresh" {
		t.Errorf("active %+v", st.Active)
	}

	running := ownedJob("tick-old", now.Add(-5*time.Minute))
	fx = newFixture(t, newCronJob("*/5 * * * *", policy(batchv1.ReplaceConcurrent), withActive(running)), running)
	fx.client.PrependReactor("delete", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(batchv1.Resource("jobs"), "tick-old", errors.New("no"))
	})
	if err := fx.c.sync(context.Background(), "ns/tick"); err == nil {
		t.Error("sync succeeded though the running job could not be replaced")
	}
	if n := len(fx.created()); n != 0 {
		t.Errorf("created %d jobs beside the one that could not be deleted", n)
	}
	if !strings.Contains(fx.events(), "Warning FailedDelete Deleted job: ") {
		t.Errorf("events: %s", fx.events())
	}
}

// A schedule that parses but never fires (30 February) is invalid to
// Kubernetes, which tells so with an InvalidSchedule warning.
func TestNeverFiringScheduleIsInvalid(t *testing.T) {
	fx := newFixture(t, newCronJob("0 0 30 2 *"))
	q := &afterQueue{Queue: fx.c.queue}
	fx.c.queue = q
	fx.sync(t)
	if want := "Warning InvalidSchedule invalid schedule: 0 0 30 2 * : time difference between two schedules is less than 1 second"; !strings.Contains(fx.events(), want) {
		t.Errorf("events lack %q:\n%s", want, fx.events())
	}
	if len(fx.created()) != 0 || len(q.after) != 0 {
		t.Errorf("created %d jobs, requeued after %v", len(fx.created()), q.after)
	}
}

// History cleanup deletes the oldest by status.startTime as Kubernetes does:
// a finished Job that never started counts as the newest (whatever its
// creation time), and Jobs that started together go in name order.
func TestHistoryCleanupOrder(t *testing.T) {
	one := int32(1)
	started := now.Add(-time.Hour)
	a := ownedJob("tick-a", started, done(batchv1.JobComplete))
	b := ownedJob("tick-b", started, done(batchv1.JobComplete))
	c := ownedJob("tick-c", now.Add(-2*time.Hour), done(batchv1.JobComplete), func(j *batchv1.Job) { j.Status.StartTime = nil })
	cj := newCronJob("0 0 1 1 *", func(cj *batchv1.CronJob) { cj.Spec.SuccessfulJobsHistoryLimit = &one })
	fx := newFixture(t, cj, c, b, a)
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"tick-a", "tick-b"}) {
		t.Fatalf("deleted %v, want tick-a and tick-b (tick-c never started: the newest)", got)
	}
}

// As Kubernetes' update handler: a CronJob whose schedule or time zone was
// edited is synced at the next time of its new schedule, counted from its
// last schedule time, so the edit alone does not start a Job for a time of
// the new schedule already past (09:00 here); any other edit syncs it now.
func TestScheduleEditWaitsForTheNewSchedule(t *testing.T) {
	tokyo := "Asia/Tokyo"
	prev := newCronJob("0 0 * * *", lastScheduled(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)))
	for _, tc := range []struct {
		name  string
		edit  cjOpt
		after []time.Duration
	}{
		{"schedule", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "0 9 * * *" }, []time.Duration{20*time.Hour + 59*time.Minute + 30*time.Second + 100*time.Millisecond}},
		// Midnight in Tokyo is 15:00 UTC.
		{"time zone", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = &tokyo }, []time.Duration{2*time.Hour + 59*time.Minute + 30*time.Second + 100*time.Millisecond}},
		{"other field", func(cj *batchv1.CronJob) { cj.Labels = map[string]string{"team": "a"} }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			q := &afterQueue{Queue: fx.c.queue}
			fx.c.queue = q
			cur := prev.DeepCopy()
			tc.edit(cur)
			fx.c.cronJobUpdated(prev, cur)
			if !slices.Equal(q.after, tc.after) {
				t.Errorf("requeued after %v, want %v", q.after, tc.after)
			}
			if now := tc.after == nil; (q.Len() == 1) != now {
				t.Errorf("queued now: %d keys, want a sync now: %v", q.Len(), now)
			}
		})
	}
}

// A running Job the CronJob controls but never listed (made by hand, as
// "kubectl create job --from=cronjob/tick" does) is only warned about, as in
// Kubernetes' syncCronJob: it stays out of status.active, so Forbid does not
// wait for it and Replace does not delete it.
func TestUnlistedJobIsNotActive(t *testing.T) {
	manual := ownedJob("tick-manual-abc", now.Add(-time.Minute))
	for _, p := range []batchv1.ConcurrencyPolicy{batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent} {
		t.Run(string(p), func(t *testing.T) {
			fx := newFixture(t, newCronJob("*/5 * * * *", policy(p)), manual)
			fx.sync(t)
			if len(fx.created()) != 1 || len(fx.deleted()) != 0 {
				t.Errorf("created %d, deleted %v: want the scheduled job beside the manual one", len(fx.created()), fx.deleted())
			}
			for _, ref := range fx.status(t).Active {
				if ref.Name == manual.Name {
					t.Errorf("the unlisted job is in status.active: %+v", fx.status(t).Active)
				}
			}
			if !strings.Contains(fx.events(), "Warning UnexpectedJob Saw a job that the controller did not create or forgot: tick-manual-abc") {
				t.Errorf("events: %s", fx.events())
			}
		})
	}
}

// A sync woken by its new Job before the informer has the CronJob's own
// status write (the cache says nothing ran at 12:00, the API server says the
// 12:00 Job runs) goes on from the stored CronJob, as Kubernetes'
// syncCronJob does: Replace must not delete the Job it just made, nor Forbid
// report it as a prior run.
func TestStaleCacheAfterOwnStatusWrite(t *testing.T) {
	due := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	made := ownedJob(fmt.Sprintf("tick-%d", due.Unix()/60), due)
	for _, p := range []batchv1.ConcurrencyPolicy{batchv1.ReplaceConcurrent, batchv1.ForbidConcurrent, batchv1.AllowConcurrent} {
		t.Run(string(p), func(t *testing.T) {
			cached := newCronJob("*/5 * * * *", policy(p), lastScheduled(due.Add(-5*time.Minute)))
			stored := newCronJob("*/5 * * * *", policy(p), lastScheduled(due), withActive(made))
			stored.ResourceVersion = "2"
			fx := newFixture(t, cached, made)
			if _, err := fx.client.BatchV1().CronJobs("ns").UpdateStatus(context.Background(), stored, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			fx.client.ClearActions()
			fx.sync(t)
			if len(fx.created()) != 0 || len(fx.deleted()) != 0 {
				t.Errorf("created %d, deleted %v: the 12:00 Job already runs", len(fx.created()), fx.deleted())
			}
			if ev := fx.events(); ev != "" {
				t.Errorf("events: %s", ev)
			}
			if st := fx.status(t); len(st.Active) != 1 || st.Active[0].Name != made.Name || !st.LastScheduleTime.Time.Equal(due) {
				t.Errorf("status %+v", st)
			}
		})
	}
}

// Starting again from the stored CronJob tells nothing twice: a finished Job
// both copies list is one SawCompletedJob.
func TestStaleCacheTellsOnce(t *testing.T) {
	due := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	prev := ownedJob("tick-prev", due.Add(-5*time.Minute), done(batchv1.JobComplete))
	made := ownedJob(fmt.Sprintf("tick-%d", due.Unix()/60), due)
	cached := newCronJob("*/5 * * * *", lastScheduled(due.Add(-5*time.Minute)), withActive(prev))
	stored := newCronJob("*/5 * * * *", lastScheduled(due), withActive(prev), withActive(made))
	fx := newFixture(t, cached, prev, made)
	if _, err := fx.client.BatchV1().CronJobs("ns").UpdateStatus(context.Background(), stored, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fx.sync(t)
	if ev := fx.events(); ev != "Normal SawCompletedJob Saw completed job: tick-prev, condition: Complete" {
		t.Errorf("events:\n%s", ev)
	}
	if st := fx.status(t); len(st.Active) != 1 || st.Active[0].Name != made.Name {
		t.Errorf("active %+v", st.Active)
	}
}

// History is cleaned before the active list is looked at, as in Kubernetes'
// sync: with successfulJobsHistoryLimit 0 a listed Job that completed is
// deleted (SuccessfulDelete) and dropped, not also reported SawCompletedJob.
func TestHistoryCleanupComesFirst(t *testing.T) {
	zero := int32(0)
	last := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	j := ownedJob("tick-done", last, done(batchv1.JobComplete))
	fx := newFixture(t, newCronJob("*/5 * * * *", lastScheduled(last), withActive(j),
		func(cj *batchv1.CronJob) { cj.Spec.SuccessfulJobsHistoryLimit = &zero }), j)
	fx.sync(t)
	if ev := fx.events(); ev != "Normal SuccessfulDelete Deleted job tick-done" {
		t.Errorf("events:\n%s", ev)
	}
	if st := fx.status(t); len(st.Active) != 0 || st.LastSuccessfulTime == nil {
		t.Errorf("status %+v", st)
	}
}

// A finished Job that cannot be deleted is told (FailedDelete) and retried,
// but, as in Kubernetes, does not hold back the schedule.
func TestFailedHistoryCleanupDoesNotHoldTheSchedule(t *testing.T) {
	zero := int32(0)
	old := ownedJob("tick-old", now.Add(-time.Hour), done(batchv1.JobFailed))
	fx := newFixture(t, newCronJob("*/5 * * * *", func(cj *batchv1.CronJob) { cj.Spec.FailedJobsHistoryLimit = &zero }), old)
	fx.client.PrependReactor("delete", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(batchv1.Resource("jobs"), "tick-old", errors.New("no"))
	})
	if err := fx.c.sync(context.Background(), "ns/tick"); err == nil {
		t.Error("sync succeeded though a finished job could not be deleted")
	}
	if n := len(fx.created()); n != 1 {
		t.Errorf("created %d jobs, want the due one", n)
	}
	if ev := fx.events(); !strings.Contains(ev, "Warning FailedDelete") || !strings.Contains(ev, "SuccessfulCreate") {
		t.Errorf("events:\n%s", ev)
	}
	if st := fx.status(t); len(st.Active) != 1 {
		t.Errorf("status %+v", st)
	}
}

// Replace finding an active Job already gone from the API server, though the
// cache still has it, tells it as v1.33 does (it looks the Job up first): a
// FailedGet warning, and the sync fails so that nothing is started this pass.
// The next pass, once the cache has caught up, reports the Job missing and
// starts the replacement.
func TestReplaceOfAJobAlreadyGone(t *testing.T) {
	running := ownedJob("tick-old", now.Add(-5*time.Minute))
	fx := newFixture(t, newCronJob("*/5 * * * *", policy(batchv1.ReplaceConcurrent), withActive(running)), running)
	if err := fx.client.Tracker().Delete(batchv1.SchemeGroupVersion.WithResource("jobs"), "ns", "tick-old"); err != nil {
		t.Fatal(err)
	}
	if err := fx.c.sync(context.Background(), "ns/tick"); !apierrors.IsNotFound(err) {
		t.Fatalf("sync: %v, want the job's NotFound", err)
	}
	if n := len(fx.created()); n != 0 {
		t.Errorf("created %d jobs in the pass that found the active one gone", n)
	}
	if want := `Warning FailedGet Get job: jobs.batch "tick-old" not found`; !strings.Contains(fx.events(), want) {
		t.Errorf("events lack %q", want)
	}
}

// The name of the Job due is taken by a Job this CronJob does not control. As
// v1.33, that is no error to retry and no event: the other Job's owner is
// assumed to look after it, and the schedule time is not recorded as run. The
// CronJob still wakes at its next schedule time (v1.33 queues nothing there).
func TestJobNameTakenBySomeoneElse(t *testing.T) {
	due := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		owner []metav1.OwnerReference
	}{
		{"no controller", nil},
		{"another controller", []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: "tick", UID: "uid-old-tick", Controller: ptr.To(true)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cj := newCronJob("*/5 * * * *")
			other := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: jobName(cj, due), Namespace: "ns", UID: "uid-other", OwnerReferences: tc.owner}}
			fx := newFixture(t, cj, other)
			q := &afterQueue{Queue: fx.c.queue}
			fx.c.queue = q
			if err := fx.c.sync(context.Background(), "ns/tick"); err != nil {
				t.Fatalf("sync: %v, want no retry", err)
			}
			if n := len(fx.created()); n != 1 {
				t.Fatalf("%d creates, want the one refused", n)
			}
			if ev := fx.events(); ev != "" {
				t.Errorf("events %q, want none", ev)
			}
			if st := fx.status(t); st.LastScheduleTime != nil || len(st.Active) != 0 {
				t.Errorf("status %+v, want the schedule time not recorded and nothing active", st)
			}
			if want := []time.Duration{due.Add(5*time.Minute).Sub(now) + 100*time.Millisecond}; !slices.Equal(q.after, want) {
				t.Errorf("requeued after %v, want %v", q.after, want)
			}
		})
	}
}

// A finished Job being deleted still counts toward its history limit, as in
// v1.33's cleanupFinishedJobs, until it is gone: with two kept and the newest of
// three being deleted, the oldest goes too. One already being deleted is not
// deleted again.
func TestHistoryCountsJobsBeingDeleted(t *testing.T) {
	deleting := func(j *batchv1.Job) {
		ts := metav1.NewTime(now.Add(-time.Second))
		j.DeletionTimestamp, j.Finalizers = &ts, []string{metav1.FinalizerDeleteDependents}
	}
	keepTwo := func(cj *batchv1.CronJob) { cj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](2) }
	for _, tc := range []struct {
		name        string
		deletingAge time.Duration
		want        []string
	}{
		{"newest being deleted", 10 * time.Minute, []string{"tick-30m"}},
		{"oldest being deleted", 30 * time.Minute, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{newCronJob("0 0 1 1 *", keepTwo)}
			for _, age := range []time.Duration{10 * time.Minute, 20 * time.Minute, 30 * time.Minute} {
				opts := []jobOpt{done(batchv1.JobComplete)}
				if age == tc.deletingAge {
					opts = append(opts, deleting)
				}
				objs = append(objs, ownedJob(fmt.Sprintf("tick-%dm", int(age.Minutes())), now.Add(-age), opts...))
			}
			fx := newFixture(t, objs...)
			fx.sync(t)
			if got := fx.deleted(); !slices.Equal(got, tc.want) {
				t.Errorf("deleted %v, want %v", got, tc.want)
			}
		})
	}
}

// status.active keeps the order it is in, new Jobs last, as v1.33 does: it is
// not sorted, so a list in another order is left as it is, with no write.
func TestActiveKeepsItsOrder(t *testing.T) {
	later := ownedJob("tick-b", now.Add(-10*time.Minute))
	earlier := ownedJob("tick-a", now.Add(-20*time.Minute))
	fx := newFixture(t, newCronJob("0 0 1 1 *", withActive(later), withActive(earlier)), later, earlier)
	fx.sync(t)
	if n := len(controllertest.Filter(fx.client.Actions(), "update", "cronjobs")); n != 0 {
		t.Errorf("%d status writes, want none", n)
	}
	var got []string
	for _, ref := range fx.status(t).Active {
		got = append(got, ref.Name)
	}
	if want := []string{"tick-b", "tick-a"}; !slices.Equal(got, want) {
		t.Errorf("active %v, want %v", got, want)
	}
}

// History cleanup tells each delete as v1.33's deleteJob: SuccessfulDelete
// "Deleted job <name>", or a FailedDelete warning "Deleted job: <err>" for any
// failure, a Job already gone (NotFound) included. A Job it could not delete
// is not dropped from the active list as deleted: the active list's own pass
// then reports it finished (SawCompletedJob), as Kubernetes' syncCronJob does.
func TestHistoryCleanupDeleteEvents(t *testing.T) {
	zero := int32(0)
	last := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		err       error
		wantErr   bool
		want      string
		wantSawIt bool
	}{
		{"deleted", nil, false, "Normal SuccessfulDelete Deleted job tick-done", false},
		{"refused", apierrors.NewForbidden(batchv1.Resource("jobs"), "tick-done", errors.New("no")), true,
			`Warning FailedDelete Deleted job: jobs.batch "tick-done" is forbidden: no`, true},
		{"already gone", apierrors.NewNotFound(batchv1.Resource("jobs"), "tick-done"), false,
			`Warning FailedDelete Deleted job: jobs.batch "tick-done" not found`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := ownedJob("tick-done", last, done(batchv1.JobComplete))
			fx := newFixture(t, newCronJob("*/5 * * * *", lastScheduled(last), withActive(j),
				func(cj *batchv1.CronJob) { cj.Spec.SuccessfulJobsHistoryLimit = &zero }), j)
			if tc.err != nil {
				fx.client.PrependReactor("delete", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, tc.err
				})
			}
			if err := fx.c.sync(context.Background(), "ns/tick"); (err != nil) != tc.wantErr {
				t.Errorf("sync err %v, want one: %v", err, tc.wantErr)
			}
			events := strings.Split(fx.events(), "\n")
			if events[0] != tc.want {
				t.Errorf("first event %q, want %q", events[0], tc.want)
			}
			saw := slices.ContainsFunc(events, func(e string) bool {
				return strings.HasPrefix(e, "Normal SawCompletedJob Saw completed job: tick-done")
			})
			if saw != tc.wantSawIt {
				t.Errorf("events %q: SawCompletedJob %v, want %v", events, saw, tc.wantSawIt)
			}
			if st := fx.status(t); len(st.Active) != 0 {
				t.Errorf("active %v, want the finished job dropped", st.Active)
			}
		})
	}
}
