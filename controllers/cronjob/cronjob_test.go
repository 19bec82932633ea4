package cronjob

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
)

var now = time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)

type fixture struct {
	client *fake.Clientset
	c      *Controller
	rec    *record.FakeRecorder
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := controllertest.NewClient(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	rec := record.NewFakeRecorder(1000)
	c, err := New(client, f.Batch().V1().CronJobs(), f.Batch().V1().Jobs(), rec, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o.(type) {
		case *batchv1.CronJob:
			controllertest.Load(t, f.Batch().V1().CronJobs().Informer(), o)
		case *batchv1.Job:
			controllertest.Load(t, f.Batch().V1().Jobs().Informer(), o)
		}
	}
	client.ClearActions()
	return &fixture{client: client, c: c, rec: rec}
}

func (fx *fixture) sync(t *testing.T) {
	t.Helper()
	if err := fx.c.sync(context.Background(), "ns/tick"); err != nil {
		t.Fatalf("sync: %v", err)
	}
}

func (fx *fixture) created() []*batchv1.Job {
	var out []*batchv1.Job
	for _, a := range controllertest.Filter(fx.client.Actions(), "create", "jobs") {
		out = append(out, a.(k8stesting.CreateAction).GetObject().(*batchv1.Job))
	}
	return out
}

func (fx *fixture) deleted() []string {
	var out []string
	for _, a := range controllertest.Filter(fx.client.Actions(), "delete", "jobs") {
		out = append(out, a.(k8stesting.DeleteAction).GetName())
	}
	sort.Strings(out)
	return out
}

func (fx *fixture) status(t *testing.T) batchv1.CronJobStatus {
	t.Helper()
	cj, err := fx.client.BatchV1().CronJobs("ns").Get(context.Background(), "tick", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cj.Status
}

func (fx *fixture) events() string { return strings.Join(controllertest.Events(fx.rec.Events), "\n") }

type cjOpt func(*batchv1.CronJob)

func newCronJob(schedule string, opts ...cjOpt) *batchv1.CronJob {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "tick", Namespace: "ns", UID: "uid-tick", ResourceVersion: "1",
			CreationTimestamp: metav1.NewTime(now.Add(-10 * time.Minute))},
		Spec: batchv1.CronJobSpec{
			Schedule: schedule, ConcurrencyPolicy: batchv1.AllowConcurrent,
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "tick"}},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
				}}},
			},
		},
	}
	for _, o := range opts {
		o(cj)
	}
	return cj
}

func lastScheduled(t time.Time) cjOpt {
	return func(cj *batchv1.CronJob) { mt := metav1.NewTime(t); cj.Status.LastScheduleTime = &mt }
}
func policy(p batchv1.ConcurrencyPolicy) cjOpt {
	return func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = p }
}
func withActive(j *batchv1.Job) cjOpt {
	return func(cj *batchv1.CronJob) { cj.Status.Active = append(cj.Status.Active, jobRef(j)) }
}

type jobOpt func(*batchv1.Job)

func ownedJob(name string, started time.Time, opts ...jobOpt) *batchv1.Job {
	yes := true
	st := metav1.NewTime(started)
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), CreationTimestamp: st,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: "tick", UID: "uid-tick", Controller: &yes}}},
		Status: batchv1.JobStatus{StartTime: &st},
	}
	for _, o := range opts {
		o(j)
	}
	return j
}

func done(ct batchv1.JobConditionType) jobOpt {
	return func(j *batchv1.Job) {
		j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: ct, Status: corev1.ConditionTrue})
		if ct == batchv1.JobComplete {
			t := metav1.NewTime(j.Status.StartTime.Add(time.Minute))
			j.Status.CompletionTime = &t
		}
	}
}

func TestCreatesTheJobOfTheDueScheduleTime(t *testing.T) {
	fx := newFixture(t, newCronJob("*/5 * * * *"))
	fx.sync(t)
	jobs := fx.created()
	due := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if len(jobs) != 1 {
		t.Fatalf("created %d jobs", len(jobs))
	}
	j := jobs[0]
	if j.Name != fmt.Sprintf("tick-%d", due.Unix()/60) || j.Annotations[batchv1.CronJobScheduledTimestampAnnotation] != "2026-03-01T12:00:00Z" ||
		j.Labels["app"] != "tick" || metav1.GetControllerOf(j) == nil {
		t.Errorf("job: %+v", j.ObjectMeta)
	}
	st := fx.status(t)
	if st.LastScheduleTime == nil || !st.LastScheduleTime.Time.Equal(due) || len(st.Active) != 1 || st.Active[0].Name != j.Name {
		t.Errorf("status: %+v", st)
	}
	if !strings.Contains(fx.events(), "SuccessfulCreate") {
		t.Errorf("events: %s", fx.events())
	}
}

func TestNothingDueNothingCreated(t *testing.T) {
	fx := newFixture(t, newCronJob("*/5 * * * *", lastScheduled(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))))
	fx.sync(t)
	if n := len(fx.created()); n != 0 {
		t.Fatalf("created %d jobs", n)
	}
}

func TestTimeZone(t *testing.T) {
	// 09:00 in Tokyo (UTC+9) is 00:00 UTC.
	tz := "Asia/Tokyo"
	saved := now
	now = time.Date(2026, 3, 1, 0, 0, 30, 0, time.UTC)
	defer func() { now = saved }()
	fx := newFixture(t, newCronJob("0 9 * * *", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = &tz }))
	fx.sync(t)
	jobs := fx.created()
	if len(jobs) != 1 || jobs[0].Annotations[batchv1.CronJobScheduledTimestampAnnotation] != "2026-03-01T09:00:00+09:00" {
		t.Fatalf("jobs: %+v", jobs)
	}
	bad := "Mars/Olympus"
	fx = newFixture(t, newCronJob("0 9 * * *", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = &bad }))
	fx.sync(t)
	if len(fx.created()) != 0 || !strings.Contains(fx.events(), ReasonUnknownTimeZone) {
		t.Fatalf("unknown time zone: created %d, events %s", len(fx.created()), fx.events())
	}
}

func TestConcurrencyPolicies(t *testing.T) {
	running := ownedJob("tick-old", now.Add(-5*time.Minute))
	fx := newFixture(t, newCronJob("*/5 * * * *", policy(batchv1.ForbidConcurrent), withActive(running)), running)
	fx.sync(t)
	if len(fx.created()) != 0 || !strings.Contains(fx.events(), ReasonJobAlreadyActive) {
		t.Fatalf("Forbid: created %d, events %s", len(fx.created()), fx.events())
	}

	fx = newFixture(t, newCronJob("*/5 * * * *", policy(batchv1.ReplaceConcurrent), withActive(running)), running)
	fx.sync(t)
	if !slices.Equal(fx.deleted(), []string{"tick-old"}) || len(fx.created()) != 1 {
		t.Fatalf("Replace: deleted %v, created %d", fx.deleted(), len(fx.created()))
	}
	if st := fx.status(t); len(st.Active) != 1 || st.Active[0].Name == "tick-old" {
		t.Fatalf("Replace: active %+v", st.Active)
	}

	fx = newFixture(t, newCronJob("*/5 * * * *", withActive(running)), running)
	fx.sync(t)
	if len(fx.created()) != 1 || len(fx.deleted()) != 0 {
		t.Fatal("Allow: a new job beside the running one")
	}
}

func TestStartingDeadlineSkipsTimesTooLongAgo(t *testing.T) {
	last := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	sds := int64(20)
	fx := newFixture(t, newCronJob("0 * * * *", lastScheduled(last), func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = &sds }))
	fx.sync(t) // 12:00 was 30s ago, the deadline is 20s
	if n := len(fx.created()); n != 0 {
		t.Fatalf("created %d jobs past the starting deadline", n)
	}
	sds = 60
	fx = newFixture(t, newCronJob("0 * * * *", lastScheduled(last), func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = &sds }))
	fx.sync(t)
	if n := len(fx.created()); n != 1 {
		t.Fatalf("created %d jobs within the starting deadline", n)
	}
}

func TestSuspendedSchedulesNothing(t *testing.T) {
	yes := true
	fx := newFixture(t, newCronJob("* * * * *", func(cj *batchv1.CronJob) { cj.Spec.Suspend = &yes }))
	fx.sync(t)
	if n := len(fx.created()); n != 0 {
		t.Fatalf("created %d", n)
	}
}

func TestActiveFollowsJobsAndHistoryIsTrimmed(t *testing.T) {
	var objs []runtime.Object
	finishedJob := ownedJob("tick-done", now.Add(-2*time.Minute), done(batchv1.JobComplete))
	cj := newCronJob("*/5 * * * *", lastScheduled(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)), withActive(finishedJob))
	objs = append(objs, cj, finishedJob)
	for i := range 4 {
		objs = append(objs, ownedJob(fmt.Sprintf("tick-ok%d", i), now.Add(-time.Duration(10*(i+1))*time.Minute), done(batchv1.JobComplete)))
	}
	for i := range 2 {
		objs = append(objs, ownedJob(fmt.Sprintf("tick-bad%d", i), now.Add(-time.Duration(10*(i+1))*time.Minute), done(batchv1.JobFailed)))
	}
	fx := newFixture(t, objs...)
	fx.sync(t)
	// 5 successful (limit 3): the two oldest go; 2 failed (limit 1): the older goes.
	if got := fx.deleted(); !slices.Equal(got, []string{"tick-bad1", "tick-ok2", "tick-ok3"}) {
		t.Fatalf("deleted %v", got)
	}
	st := fx.status(t)
	if len(st.Active) != 0 || st.LastSuccessfulTime == nil || !st.LastSuccessfulTime.Time.Equal(now.Add(-time.Minute)) {
		t.Fatalf("status: %+v", st)
	}
	if !strings.Contains(fx.events(), ReasonSawCompletedJob) {
		t.Errorf("events: %s", fx.events())
	}
}

func TestNeverFiringScheduleDoesNotLoop(t *testing.T) {
	fx := newFixture(t, newCronJob("0 0 30 2 *"))
	fx.sync(t)
	if n := len(fx.created()); n != 0 {
		t.Fatalf("created %d", n)
	}
}

// A Job whose controller reference names an older batch version (made by a
// batch/v1beta1 CronJob) still wakes its CronJob, as in Kubernetes, which
// matches by kind; sync then checks the UID.
func TestJobWithLegacyControllerRefWakesItsCronJob(t *testing.T) {
	fx := newFixture(t)
	j := ownedJob("tick-1", now)
	j.OwnerReferences[0].APIVersion = "batch/v1beta1"
	fx.c.jobChanged(j)
	if got := fx.c.queue.Len(); got != 1 {
		t.Fatalf("queue holds %d keys after a legacy-owned Job changed, want 1", got)
	}
	if key, _ := fx.c.queue.Get(); key != "ns/tick" {
		t.Errorf("queued %q, want ns/tick", key)
	}
}
