package job

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/apiserver/validation"
	"github.com/skiffkube/skiff/controllers/controllertest"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	client *fake.Clientset
	c      *Controller
	rec    *record.FakeRecorder
	pods   cache.SharedIndexInformer // what the controller's pod lister reads
	jobs   cache.SharedIndexInformer // what its Job lister reads
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := controllertest.NewClient(objs...)
	refuseInvalidJobStatus(t, client)
	f := informers.NewSharedInformerFactory(client, 0)
	rec := record.NewFakeRecorder(1000)
	c, err := New(client, f.Batch().V1().Jobs(), f.Core().V1().Pods(), rec, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o.(type) {
		case *batchv1.Job:
			controllertest.Load(t, f.Batch().V1().Jobs().Informer(), o)
		case *corev1.Pod:
			controllertest.Load(t, f.Core().V1().Pods().Informer(), o)
		}
	}
	client.ClearActions()
	return &fixture{client: client, c: c, rec: rec, pods: f.Core().V1().Pods().Informer(), jobs: f.Batch().V1().Jobs().Informer()}
}

// refuseInvalidJobStatus makes the fake API server judge each Job status
// write as skiff's API server does (Kubernetes' Job status rules, against
// the stored Job, whose spec and metadata the status write keeps): a status
// the controller computes must never be refused.
func refuseInvalidJobStatus(t *testing.T, client *fake.Clientset) {
	client.PrependReactor("update", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ua, ok := a.(k8stesting.UpdateAction)
		if !ok || ua.GetSubresource() != "status" {
			return false, nil, nil
		}
		written := ua.GetObject().(*batchv1.Job)
		obj, err := client.Tracker().Get(a.GetResource(), a.GetNamespace(), written.Name)
		if err != nil {
			return false, nil, nil // the tracker answers
		}
		stored := obj.(*batchv1.Job)
		if written.ResourceVersion != stored.ResourceVersion {
			// Written from a stale copy: the API server answers 409
			// before it judges the status (the tracker would store it).
			return true, nil, apierrors.NewConflict(batchv1.Resource("jobs"), written.Name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
		}
		next := stored.DeepCopy()
		next.Status = written.Status
		if errs := validation.ValidateStatusUpdate(next, stored); len(errs) > 0 {
			t.Errorf("the controller wrote a status the API server refuses: %v", errs.ToAggregate())
			return true, nil, apierrors.NewInvalid(batchv1.SchemeGroupVersion.WithKind("Job").GroupKind(), written.Name, errs)
		}
		// The tracker keeps resourceVersions as written: move it on, so a
		// later write from a copy older than this one is known stale.
		rv, _ := strconv.Atoi(stored.ResourceVersion)
		written.ResourceVersion = strconv.Itoa(rv + 1)
		return false, nil, nil
	})
}

func (fx *fixture) sync(t *testing.T, key string) {
	t.Helper()
	if err := fx.c.sync(context.Background(), key); err != nil {
		t.Fatalf("sync %s: %v", key, err)
	}
}

func (fx *fixture) job(t *testing.T) *batchv1.Job {
	t.Helper()
	j, err := fx.client.BatchV1().Jobs("ns").Get(context.Background(), "work", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func (fx *fixture) created(t *testing.T) []*corev1.Pod {
	t.Helper()
	var out []*corev1.Pod
	for _, a := range controllertest.Filter(fx.client.Actions(), "create", "pods") {
		out = append(out, a.(k8stesting.CreateAction).GetObject().(*corev1.Pod))
	}
	return out
}

func (fx *fixture) deleted() []string {
	var out []string
	for _, a := range controllertest.Filter(fx.client.Actions(), "delete", "pods") {
		out = append(out, a.(k8stesting.DeleteAction).GetName())
	}
	return out
}

type jobOpt func(*batchv1.Job)

func newJob(opts ...jobOpt) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "work", Namespace: "ns", UID: "uid-work", ResourceVersion: "1"},
		Spec: batchv1.JobSpec{
			Completions: ptrTo(int32(1)), Parallelism: ptrTo(int32(1)), BackoffLimit: ptrTo(int32(6)),
			CompletionMode: ptrTo(batchv1.NonIndexedCompletion),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: "uid-work"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{batchv1.ControllerUidLabel: "uid-work"}},
				Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
		Status: batchv1.JobStatus{StartTime: &metav1.Time{Time: now.Add(-time.Minute)}},
	}
	for _, o := range opts {
		o(j)
	}
	return j
}

func completions(n int32) jobOpt { return func(j *batchv1.Job) { j.Spec.Completions = &n } }
func parallel(n int32) jobOpt    { return func(j *batchv1.Job) { j.Spec.Parallelism = &n } }
func backoffLim(n int32) jobOpt  { return func(j *batchv1.Job) { j.Spec.BackoffLimit = &n } }
func indexedMode(j *batchv1.Job) { j.Spec.CompletionMode = ptrTo(batchv1.IndexedCompletion) }
func suspend(j *batchv1.Job)     { j.Spec.Suspend = ptrTo(true) }
func failedCount(n int32) jobOpt { return func(j *batchv1.Job) { j.Status.Failed = n } }
func deadline(s int64) jobOpt    { return func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = &s } }
func ttl(s int32) jobOpt         { return func(j *batchv1.Job) { j.Spec.TTLSecondsAfterFinished = &s } }
func startedAgo(d time.Duration) jobOpt {
	return func(j *batchv1.Job) { j.Status.StartTime = &metav1.Time{Time: now.Add(-d)} }
}
func completedAgo(d time.Duration) jobOpt {
	return func(j *batchv1.Job) {
		j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{
			Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-d)),
		})
	}
}

type podOpt func(*corev1.Pod)

func newPod(name string, phase corev1.PodPhase, opts ...podOpt) *corev1.Pod {
	yes := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "1",
			Labels:            map[string]string{batchv1.ControllerUidLabel: "uid-work"},
			Finalizers:        []string{batchv1.JobTrackingFinalizer},
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "work", UID: "uid-work", Controller: &yes}},
		},
		Spec:   corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: phase},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func finishedAgo(d time.Duration) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: metav1.NewTime(now.Add(-d))},
		}}}
	}
}
func index(i string) podOpt {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: i} }
}
func noOwner(p *corev1.Pod) { p.OwnerReferences = nil }

func hasCondition(j *batchv1.Job, t batchv1.JobConditionType, reason string) bool {
	c := condition(&j.Status, t)
	return c != nil && c.Status == corev1.ConditionTrue && (reason == "" || c.Reason == reason)
}

func events(fx *fixture) string { return strings.Join(controllertest.Events(fx.rec.Events), "\n") }

func TestCreatesUpToParallelismWithTrackingFinalizer(t *testing.T) {
	fx := newFixture(t, newJob(completions(5), parallel(2)))
	fx.sync(t, "ns/work")
	pods := fx.created(t)
	if len(pods) != 2 {
		t.Fatalf("created %d pods, want 2", len(pods))
	}
	p := pods[0]
	if !slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) || !strings.HasPrefix(p.GenerateName, "work-") {
		t.Errorf("pod meta: %+v", p.ObjectMeta)
	}
	if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != "uid-work" || ref.Kind != "Job" {
		t.Errorf("controller ref: %+v", ref)
	}
	if !strings.Contains(events(fx), "SuccessfulCreate") {
		t.Errorf("events: %s", events(fx))
	}
}

func TestCountsTerminatedPodsThroughUncountedThenFinalizerRemoval(t *testing.T) {
	fx := newFixture(t, newJob(completions(3), parallel(2)),
		newPod("ok", corev1.PodSucceeded), newPod("bad", corev1.PodFailed, finishedAgo(time.Hour)), newPod("run", corev1.PodRunning))
	fx.sync(t, "ns/work")

	// First status write records the UIDs as uncounted, before any finalizer is removed.
	var statusWrites []*batchv1.Job
	var firstPatch = -1
	for i, a := range fx.client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			statusWrites = append(statusWrites, a.(k8stesting.UpdateAction).GetObject().(*batchv1.Job))
		}
		if a.GetVerb() == "patch" && a.GetResource().Resource == "pods" && firstPatch < 0 {
			firstPatch = i
			if len(statusWrites) == 0 {
				t.Fatal("a finalizer was removed before the pod was recorded in uncountedTerminatedPods")
			}
		}
	}
	u := statusWrites[0].Status.UncountedTerminatedPods
	if u == nil || !slices.Equal(u.Succeeded, []types.UID{"uid-ok"}) || !slices.Equal(u.Failed, []types.UID{"uid-bad"}) {
		t.Fatalf("first status write: %+v", u)
	}
	j := fx.job(t)
	if j.Status.Succeeded != 1 || j.Status.Failed != 1 || len(j.Status.UncountedTerminatedPods.Succeeded)+len(j.Status.UncountedTerminatedPods.Failed) != 0 {
		t.Fatalf("final counts: %+v", j.Status)
	}
	for _, name := range []string{"ok", "bad"} {
		p, _ := fx.client.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
		if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
			t.Errorf("pod %s keeps its tracking finalizer", name)
		}
	}
	// 3 completions - 1 succeeded = 2 wanted, 1 running: one more pod.
	if n := len(fx.created(t)); n != 1 {
		t.Errorf("created %d pods, want 1", n)
	}
	// The running pod and the one just created, as Kubernetes counts them.
	if j.Status.Active != 2 {
		t.Errorf("active = %d, want 2", j.Status.Active)
	}
}

// TestAReleasedPodIsNotCountedAgainFromAnOlderCopy checks a sync that sees
// the Job as last written (the failure counted, uncountedTerminatedPods
// empty) but the failed pod as it was before its tracking finalizer was
// removed: the informers deliver the two kinds on separate watches, and
// under load the pod's copy can lag. The pod must not be counted again
// (seen end to end: a Job with backoffLimit 2 reporting 4 failures).
func TestAReleasedPodIsNotCountedAgainFromAnOlderCopy(t *testing.T) {
	fx := newFixture(t, newJob(completions(3), parallel(1), backoffLim(5)), newPod("bad", corev1.PodFailed, finishedAgo(time.Hour)))
	fx.sync(t, "ns/work")
	if j := fx.job(t); j.Status.Failed != 1 {
		t.Fatalf("after the first sync: failed = %d, want 1", j.Status.Failed)
	}
	controllertest.Load(t, fx.jobs, fx.job(t)) // the Job's copy catches up; the pod's does not
	fx.sync(t, "ns/work")
	if j := fx.job(t); j.Status.Failed != 1 {
		t.Errorf("a sync with the pod's older copy: failed = %d, want 1 (the pod counted twice)", j.Status.Failed)
	}
	// Once the informer shows the finalizer gone, nothing is held back.
	p, _ := fx.client.CoreV1().Pods("ns").Get(context.Background(), "bad", metav1.GetOptions{})
	controllertest.Load(t, fx.pods, p)
	fx.c.podChanged(p, false, false)
	if fx.c.released.pending("ns/work", p.UID) {
		t.Errorf("the pod is still pending after the informer showed its finalizer gone")
	}
}

func TestCompletesWhenCompletionsSucceeded(t *testing.T) {
	fx := newFixture(t, newJob(completions(2), parallel(2)), newPod("a", corev1.PodSucceeded), newPod("b", corev1.PodSucceeded))
	fx.sync(t, "ns/work")
	j := fx.job(t)
	if !hasCondition(j, batchv1.JobComplete, "") || j.Status.CompletionTime == nil || j.Status.Succeeded != 2 {
		t.Fatalf("status: %+v", j.Status)
	}
	if len(fx.created(t)) != 0 {
		t.Error("a completed job created pods")
	}
	if !strings.Contains(events(fx), "Completed") {
		t.Errorf("events: %s", events(fx))
	}
}

func TestWorkQueueCompletesAfterOneSuccessAndTheRestFinish(t *testing.T) {
	j := newJob(parallel(3))
	j.Spec.Completions = nil
	fx := newFixture(t, j, newPod("a", corev1.PodSucceeded), newPod("b", corev1.PodRunning))
	fx.sync(t, "ns/work")
	if len(fx.created(t)) != 0 || hasCondition(fx.job(t), batchv1.JobComplete, "") {
		t.Fatalf("work queue with a success and a running pod: no new pods, not complete yet")
	}
}

func TestBackoffLimitExceededFailsTheJob(t *testing.T) {
	fx := newFixture(t, newJob(backoffLim(1), failedCount(1)),
		newPod("bad", corev1.PodFailed, finishedAgo(time.Hour)), newPod("run", corev1.PodRunning))
	fx.sync(t, "ns/work")
	j := fx.job(t)
	// FailureTarget first; Failed once the running pod, deleted, is gone.
	if !hasCondition(j, batchv1.JobFailureTarget, ReasonBackoffLimitExceeded) || hasCondition(j, batchv1.JobFailed, "") || j.Status.Failed != 2 {
		t.Fatalf("status: %+v", j.Status)
	}
	if !slices.Equal(fx.deleted(), []string{"run"}) {
		t.Errorf("deleted %v, want the running pod", fx.deleted())
	}
	if len(fx.created(t)) != 0 {
		t.Error("a failed job created pods")
	}
	fx = newFixture(t, j)
	fx.sync(t, "ns/work")
	if j := fx.job(t); !hasCondition(j, batchv1.JobFailed, ReasonBackoffLimitExceeded) {
		t.Fatalf("status once the pod is gone: %+v", j.Status)
	}
	if !strings.Contains(events(fx), "BackoffLimitExceeded") {
		t.Errorf("events: %s", events(fx))
	}
}

func TestFailedPodReplacedOnlyAfterBackoff(t *testing.T) {
	// One failure: 10s back-off. Failed 1s ago: wait.
	fx := newFixture(t, newJob(), newPod("bad", corev1.PodFailed, finishedAgo(time.Second)))
	fx.sync(t, "ns/work")
	if n := len(fx.created(t)); n != 0 {
		t.Fatalf("created %d pods inside the back-off", n)
	}
	// Failed 11s ago: replace.
	fx = newFixture(t, newJob(), newPod("bad", corev1.PodFailed, finishedAgo(11*time.Second)))
	fx.sync(t, "ns/work")
	if n := len(fx.created(t)); n != 1 {
		t.Fatalf("created %d pods after the back-off, want 1", n)
	}
	if d := backoffDelay(10*time.Second, 3); d != 40*time.Second {
		t.Errorf("third back-off = %s, want 40s", d)
	}
	if d := backoffDelay(10*time.Second, 20); d != MaxBackoff {
		t.Errorf("back-off cap = %s", d)
	}
}

func TestActiveDeadlineFailsTheJob(t *testing.T) {
	fx := newFixture(t, newJob(deadline(10), startedAgo(20*time.Second)), newPod("run", corev1.PodRunning))
	fx.sync(t, "ns/work")
	if j := fx.job(t); !hasCondition(j, batchv1.JobFailureTarget, ReasonDeadlineExceeded) {
		t.Fatalf("status: %+v", j.Status)
	}
	if !slices.Equal(fx.deleted(), []string{"run"}) {
		t.Errorf("deleted %v", fx.deleted())
	}
}

func TestIndexedJobStartsMissingIndexes(t *testing.T) {
	fx := newFixture(t, newJob(indexedMode, completions(4), parallel(2)),
		newPod("w0", corev1.PodSucceeded, index("0")), newPod("w1", corev1.PodRunning, index("1")),
		newPod("dup", corev1.PodRunning, index("1"), func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now) }))
	fx.sync(t, "ns/work")
	j := fx.job(t)
	if j.Status.CompletedIndexes != "0" {
		t.Errorf("completedIndexes = %q", j.Status.CompletedIndexes)
	}
	if !slices.Equal(fx.deleted(), []string{"dup"}) {
		t.Errorf("deleted %v, want the newer duplicate of index 1", fx.deleted())
	}
	// As Kubernetes, a sync that deletes pods creates none: index 2 starts on the next.
	if pods := fx.created(t); len(pods) != 0 {
		t.Fatalf("created %d pods in the sync that deleted one", len(pods))
	}
	fx = newFixture(t, newJob(indexedMode, completions(4), parallel(2)),
		newPod("w0", corev1.PodSucceeded, index("0")), newPod("w1", corev1.PodRunning, index("1")))
	fx.sync(t, "ns/work")
	pods := fx.created(t)
	if len(pods) != 1 {
		t.Fatalf("created %d pods, want 1 (parallelism 2, index 1 running)", len(pods))
	}
	p := pods[0]
	if p.Annotations[batchv1.JobCompletionIndexAnnotation] != "2" || p.Labels[batchv1.JobCompletionIndexAnnotation] != "2" ||
		p.Spec.Hostname != "work-2" || p.GenerateName != "work-2-" {
		t.Errorf("indexed pod: %+v %+v", p.ObjectMeta, p.Spec.Hostname)
	}
}

// Indexed pods are built as Kubernetes builds them: JOB_COMPLETION_INDEX in
// every container unless the template sets it, the index as hostname even over
// the template's, and a generateName prefix short enough for a random suffix.
func TestIndexedPodsCarryTheirIndex(t *testing.T) {
	j := newJob(indexedMode, completions(3))
	j.Spec.Template.Spec.Hostname = "fixed"
	j.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "setup", Env: []corev1.EnvVar{{Name: "JOB_COMPLETION_INDEX", Value: "mine"}}}}
	j.Spec.Template.Spec.Containers = []corev1.Container{{Name: "main", Env: []corev1.EnvVar{{Name: "A", Value: "1"}}}}
	p := podFor(j, ptrTo(7), indexFailures{})
	if p.Spec.Hostname != "work-7" || p.GenerateName != "work-7-" {
		t.Errorf("hostname %q, generateName %q; want work-7 and work-7-", p.Spec.Hostname, p.GenerateName)
	}
	if env := p.Spec.InitContainers[0].Env; len(env) != 1 || env[0].Value != "mine" {
		t.Errorf("init container env %+v: the template's own JOB_COMPLETION_INDEX must stay", env)
	}
	env := p.Spec.Containers[0].Env
	if len(env) != 2 || env[1].Name != "JOB_COMPLETION_INDEX" || env[1].ValueFrom == nil || env[1].ValueFrom.FieldRef == nil ||
		env[1].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("container env %+v, want JOB_COMPLETION_INDEX from the index annotation appended", env)
	}
	if len(j.Spec.Template.Spec.Containers[0].Env) != 1 || j.Spec.Template.Spec.Hostname != "fixed" {
		t.Error("podFor changed the Job's template")
	}

	j.Name = strings.Repeat("n", 63)
	if got := podFor(j, ptrTo(12), indexFailures{}).GenerateName; got != strings.Repeat("n", 54)+"-12-" {
		t.Errorf("generateName %q (%d chars), want the name cut to leave 58 for the prefix", got, len(got))
	}
	if got := podFor(newJob(), nil, indexFailures{}); len(got.Spec.Containers[0].Env) != len(newJob().Spec.Template.Spec.Containers[0].Env) {
		t.Errorf("a non-indexed pod got env %+v", got.Spec.Containers[0].Env)
	}
}

func TestIndexedJobCompletesWhenEveryIndexSucceeded(t *testing.T) {
	j := newJob(indexedMode, completions(3), parallel(3))
	j.Status.CompletedIndexes = "0,2"
	j.Status.Succeeded = 2
	fx := newFixture(t, j, newPod("w1", corev1.PodSucceeded, index("1")))
	fx.sync(t, "ns/work")
	if j := fx.job(t); !hasCondition(j, batchv1.JobComplete, "") || j.Status.CompletedIndexes != "0-2" {
		t.Fatalf("status: %+v", j.Status)
	}
}

// Two pods of one index that both succeed (a duplicate that finished
// before it could be deleted) count once: an Indexed Job's succeeded is its
// number of succeeded indexes, as in Kubernetes.
func TestIndexedJobCountsSucceededIndexesNotPods(t *testing.T) {
	fx := newFixture(t, newJob(indexedMode, completions(3), parallel(3)),
		newPod("w0", corev1.PodSucceeded, index("0")), newPod("w0-dup", corev1.PodSucceeded, index("0")),
		newPod("w1", corev1.PodSucceeded, index("1")), newPod("w2", corev1.PodSucceeded, index("2")))
	fx.sync(t, "ns/work")
	j := fx.job(t)
	if j.Status.Succeeded != 3 || j.Status.CompletedIndexes != "0-2" || !hasCondition(j, batchv1.JobComplete, "") {
		t.Fatalf("succeeded %d, completedIndexes %q, complete %v; want 3, 0-2, true", j.Status.Succeeded, j.Status.CompletedIndexes, hasCondition(j, batchv1.JobComplete, ""))
	}
	if u := j.Status.UncountedTerminatedPods; u != nil && len(u.Succeeded) > 0 {
		t.Errorf("succeeded pods of an Indexed Job left uncounted: %v", u.Succeeded)
	}
}

// The Job's copy in the informer can predate the status write that
// recorded an index, while its pod, finalizer already removed, is no longer
// counted: the pod's success still keeps the index from starting again.
func TestIndexedJobDoesNotRestartAnIndexWhoseStatusIsStale(t *testing.T) {
	released := func(p *corev1.Pod) { p.Finalizers = nil }
	fx := newFixture(t, newJob(indexedMode, completions(3), parallel(3)),
		newPod("w0", corev1.PodSucceeded, index("0"), released), newPod("w1", corev1.PodRunning, index("1")))
	fx.sync(t, "ns/work")
	var started []string
	for _, p := range fx.created(t) {
		started = append(started, p.Annotations[batchv1.JobCompletionIndexAnnotation])
	}
	if !slices.Equal(started, []string{"2"}) {
		t.Errorf("started indexes %v, want [2] (0 succeeded, 1 runs)", started)
	}
}

func TestJobDoesNotReplaceATerminatedPodWhoseStatusIsStale(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  *batchv1.Job
		pods []runtime.Object
	}{
		// w0 succeeded and w1 runs: the two completions are covered.
		{"succeeded", newJob(completions(2), parallel(2)),
			[]runtime.Object{newPod("w0", corev1.PodSucceeded), newPod("w1", corev1.PodRunning)}},
		// w0's failure exhausts a backoff limit of 0: the Job has failed.
		{"failed", newJob(completions(1), parallel(1), backoffLim(0)),
			[]runtime.Object{newPod("w0", corev1.PodFailed)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The first sync counts w0 and removes its tracking finalizer.
			fx := newFixture(t, append([]runtime.Object{tc.job}, tc.pods...)...)
			fx.sync(t, "ns/work")
			if n := len(fx.created(t)); n != 0 {
				t.Fatalf("first sync created %d pods", n)
			}
			// The next sync sees w0 released, but the informer's Job still
			// predates the status writes that counted it.
			w0 := tc.pods[0].(*corev1.Pod).DeepCopy()
			w0.Finalizers = nil
			controllertest.Load(t, fx.pods, w0)
			// Its status write from that stale copy is a conflict (retried
			// with the fresh Job), as the API server answers it.
			if err := fx.c.sync(context.Background(), "ns/work"); err != nil && !apierrors.IsConflict(err) {
				t.Fatalf("second sync: %v", err)
			}
			if n := len(fx.created(t)); n != 0 {
				t.Errorf("created %d pods in place of w0, counted before", n)
			}
		})
	}
}

// A Succeeded pod that never carried the tracking finalizer (one adopted by
// the Job, say) is not counted, as in Kubernetes: the Job runs its own.
func TestJobDoesNotCountAnUntrackedSucceededPod(t *testing.T) {
	stray := newPod("stray", corev1.PodSucceeded, func(p *corev1.Pod) { p.Finalizers = nil })
	fx := newFixture(t, newJob(completions(2), parallel(2)), stray)
	fx.sync(t, "ns/work")
	if n := len(fx.created(t)); n != 2 {
		t.Errorf("created %d pods, want 2", n)
	}
	if j := fx.job(t); j.Status.Succeeded != 0 {
		t.Errorf("succeeded = %d, want 0", j.Status.Succeeded)
	}
}

func TestSuspendDeletesPodsWithoutCountingFailures(t *testing.T) {
	fx := newFixture(t, newJob(suspend), newPod("run", corev1.PodRunning))
	fx.sync(t, "ns/work")
	if !slices.Equal(fx.deleted(), []string{"run"}) {
		t.Fatalf("deleted %v", fx.deleted())
	}
	if j := fx.job(t); !hasCondition(j, batchv1.JobSuspended, "") {
		t.Fatalf("status: %+v", j.Status)
	}
	// The deleted pod, terminating, is released without being counted as failed.
	dying := newPod("run", corev1.PodRunning, func(p *corev1.Pod) { ts := metav1.NewTime(now); p.DeletionTimestamp = &ts })
	fx = newFixture(t, newJob(suspend), dying)
	fx.sync(t, "ns/work")
	if j := fx.job(t); j.Status.Failed != 0 {
		t.Fatalf("failed = %d", j.Status.Failed)
	}
	p, _ := fx.client.CoreV1().Pods("ns").Get(context.Background(), "run", metav1.GetOptions{})
	if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
		t.Fatal("finalizer kept")
	}
}

func TestTTLDeletesFinishedJob(t *testing.T) {
	fx := newFixture(t, newJob(ttl(60), completedAgo(100*time.Second)))
	fx.sync(t, "ns/work")
	dels := controllertest.Filter(fx.client.Actions(), "delete", "jobs")
	if len(dels) != 1 {
		t.Fatalf("job deletes: %d", len(dels))
	}
	fx = newFixture(t, newJob(ttl(600), completedAgo(100*time.Second)))
	fx.sync(t, "ns/work")
	if n := len(controllertest.Filter(fx.client.Actions(), "delete", "jobs")); n != 0 {
		t.Fatal("deleted before its TTL")
	}
}

func TestOrphanPodLosesTrackingFinalizer(t *testing.T) {
	fx := newFixture(t, newPod("lost", corev1.PodRunning, noOwner))
	fx.sync(t, orphanPrefix+"ns/lost")
	p, _ := fx.client.CoreV1().Pods("ns").Get(context.Background(), "lost", metav1.GetOptions{})
	if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
		t.Fatal("orphan keeps the tracking finalizer")
	}
}

func TestIndexesRoundTrip(t *testing.T) {
	for in, want := range map[string]string{"": "", "0": "0", "0,1,2,5,7-9": "0-2,5,7-9", "3-1,x,4": "4", "8-12": "8,9", "0-1,3": "0,1,3"} {
		if got := formatIndexes(parseIndexes(in, 10)); got != want {
			t.Errorf("%q → %q, want %q", in, got, want)
		}
	}
}

func exitCode(code int32) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(now.Add(-time.Second))},
		}}}
	}
}

func failurePolicy(rules ...batchv1.PodFailurePolicyRule) jobOpt {
	return func(j *batchv1.Job) { j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: rules} }
}

func TestPodFailurePolicy(t *testing.T) {
	policy := failurePolicy(
		batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
		batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}}},
	)

	// Exit code 42: the Job fails at once, whatever the backoff limit.
	fx := newFixture(t, newJob(policy, parallel(2), completions(4)), newPod("bad", corev1.PodFailed, exitCode(42)), newPod("run", corev1.PodRunning))
	fx.sync(t, "ns/work")
	j := fx.job(t)
	c := condition(&j.Status, batchv1.JobFailureTarget)
	if c == nil || c.Reason != batchv1.JobReasonPodFailurePolicy || !strings.Contains(c.Message, "exit code 42 matching FailJob rule at index 0") {
		t.Fatalf("failed condition: %+v", c)
	}
	if !slices.Equal(fx.deleted(), []string{"run"}) {
		t.Errorf("deleted %v", fx.deleted())
	}

	// A disrupted pod is ignored: not counted, but replaced only after the back-off, as in
	// Kubernetes since v1.28 (ignored failures must not make a tight loop).
	disrupted := newPod("evicted", corev1.PodFailed, exitCode(137), func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}
	})
	fx = newFixture(t, newJob(policy), disrupted)
	fx.sync(t, "ns/work")
	if j := fx.job(t); j.Status.Failed != 0 || finished(j) {
		t.Fatalf("ignored failure counted: %+v", j.Status)
	}
	if n := len(fx.created(t)); n != 0 {
		t.Fatalf("created %d replacements within the back-off, want 0", n)
	}
	fx = newFixture(t, newJob(policy), disrupted.DeepCopy())
	fx.c.now = func() time.Time { return now.Add(10 * time.Second) }
	fx.sync(t, "ns/work")
	if n := len(fx.created(t)); n != 1 {
		t.Fatalf("created %d replacements after the back-off, want 1", n)
	}
	p, _ := fx.client.CoreV1().Pods("ns").Get(context.Background(), "evicted", metav1.GetOptions{})
	if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
		t.Error("ignored pod keeps its tracking finalizer")
	}

	// Any other failure counts as usual.
	fx = newFixture(t, newJob(policy), newPod("plain", corev1.PodFailed, exitCode(1)))
	fx.sync(t, "ns/work")
	if j := fx.job(t); j.Status.Failed != 1 || finished(j) {
		t.Fatalf("plain failure: %+v", j.Status)
	}
}

// With a pod failure policy (so podReplacementPolicy Failed), a pod being deleted is neither a
// failure nor replaced until it is Failed: the policy then judges its final conditions. Without
// one, a deleted pod counts as failed at once, as in Kubernetes.
func TestTerminatingPodsWaitForTheirVerdict(t *testing.T) {
	ignoreDisruptions := failurePolicy(batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}}})
	terminating := func(p *corev1.Pod) {
		ts := metav1.NewTime(now)
		p.DeletionTimestamp = &ts
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}
	}
	for _, tc := range []struct {
		name    string
		job     *batchv1.Job
		failed  int32
		created int
	}{
		{"pod failure policy", newJob(ignoreDisruptions, backoffLim(0)), 0, 0},
		{"podReplacementPolicy Failed", newJob(backoffLim(3), func(j *batchv1.Job) { j.Spec.PodReplacementPolicy = ptrTo(batchv1.Failed) }), 0, 0},
		{"TerminatingOrFailed (replaced after the failure's back-off)", newJob(backoffLim(3)), 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, tc.job, newPod("going", corev1.PodRunning, terminating))
			fx.sync(t, "ns/work")
			j := fx.job(t)
			if j.Status.Failed != tc.failed || finished(j) || len(fx.created(t)) != tc.created {
				t.Fatalf("failed %d, finished %v, created %d; want %d failed, unfinished, %d created",
					j.Status.Failed, finished(j), len(fx.created(t)), tc.failed, tc.created)
			}
		})
	}

	// Indexed: the terminating pod's index waits too, and keeps its place within parallelism.
	fx := newFixture(t, newJob(ignoreDisruptions, indexedMode, completions(3), parallel(2)),
		newPod("w0", corev1.PodRunning, index("0"), terminating))
	fx.sync(t, "ns/work")
	var started []string
	for _, p := range fx.created(t) {
		started = append(started, p.Annotations[batchv1.JobCompletionIndexAnnotation])
	}
	if !slices.Equal(started, []string{"1"}) {
		t.Fatalf("started indexes %v, want only 1 (0 is terminating, parallelism 2)", started)
	}

	// Once Failed with the condition, the failure is ignored and the pod replaced (after the back-off).
	fx = newFixture(t, newJob(ignoreDisruptions, backoffLim(0)), newPod("gone", corev1.PodFailed, exitCode(137), terminating))
	fx.c.now = func() time.Time { return now.Add(10 * time.Second) }
	fx.sync(t, "ns/work")
	if j := fx.job(t); j.Status.Failed != 0 || finished(j) || len(fx.created(t)) != 1 {
		t.Fatalf("after the evicted pod failed: %+v, created %d", j.Status, len(fx.created(t)))
	}
}

func TestSuccessPolicyCompletesEarly(t *testing.T) {
	leaderOnly := "0"
	two := int32(2)
	policy := func(j *batchv1.Job) {
		j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{
			{SucceededIndexes: &leaderOnly},
			{SucceededCount: &two},
		}}
	}
	// Index 0 succeeded: rule 0 is met; the still running workers go.
	fx := newFixture(t, newJob(indexedMode, completions(4), parallel(4), policy),
		newPod("w0", corev1.PodSucceeded, index("0")), newPod("w1", corev1.PodRunning, index("1")))
	fx.sync(t, "ns/work")
	j := fx.job(t)
	// w1 still runs: SuccessCriteriaMet now, Complete once it is gone.
	if c := condition(&j.Status, batchv1.JobSuccessCriteriaMet); c == nil || c.Reason != batchv1.JobReasonSuccessPolicy || c.Message != "Matched rules at index 0" {
		t.Fatalf("complete condition: %+v", c)
	}
	if len(fx.created(t)) != 0 {
		t.Error("a job that met its success policy created pods")
	}
	fx = newFixture(t, j, newPod("w0", corev1.PodSucceeded, index("0")), newPod("w1", corev1.PodRunning, index("1")))
	fx.sync(t, "ns/work")
	if !slices.Equal(fx.deleted(), []string{"w1"}) {
		t.Fatalf("lingering pods deleted: %v", fx.deleted())
	}

	// Indexes 2 and 3 succeeded: rule 1 (any two) is met.
	fx = newFixture(t, newJob(indexedMode, completions(4), parallel(4), policy),
		newPod("w2", corev1.PodSucceeded, index("2")), newPod("w3", corev1.PodSucceeded, index("3")))
	fx.sync(t, "ns/work")
	if c := condition(&fx.job(t).Status, batchv1.JobComplete); c == nil || c.Message != "Matched rules at index 1" {
		t.Fatalf("complete condition: %+v", c)
	}
	// One worker only: not yet.
	fx = newFixture(t, newJob(indexedMode, completions(4), parallel(4), policy), newPod("w2", corev1.PodSucceeded, index("2")))
	fx.sync(t, "ns/work")
	if finished(fx.job(t)) {
		t.Fatal("completed with one of two required indexes")
	}
}

func priorFailures(n string) podOpt {
	return func(p *corev1.Pod) { p.Annotations[batchv1.JobIndexFailureCountAnnotation] = n }
}

func perIndexLimit(limit int32) jobOpt {
	return func(j *batchv1.Job) {
		indexedMode(j)
		j.Spec.BackoffLimitPerIndex = &limit
		j.Spec.BackoffLimit = ptrTo(int32(1 << 30))
	}
}

func TestBackoffLimitPerIndex(t *testing.T) {
	// Index 0 failed once (limit 1): replaced, carrying the count. Index 1 failed a second time:
	// the index fails, no more pods for it. Index 2 runs.
	fx := newFixture(t, newJob(perIndexLimit(1), completions(3), parallel(3)),
		newPod("w0", corev1.PodFailed, index("0"), priorFailures("0"), finishedAgo(time.Hour)),
		newPod("w1", corev1.PodFailed, index("1"), priorFailures("1"), finishedAgo(time.Hour)),
		newPod("w2", corev1.PodRunning, index("2")))
	fx.sync(t, "ns/work")
	j := fx.job(t)
	if j.Status.FailedIndexes == nil || *j.Status.FailedIndexes != "1" || finished(j) {
		t.Fatalf("status: %+v", j.Status)
	}
	pods := fx.created(t)
	if len(pods) != 1 || pods[0].Annotations[batchv1.JobCompletionIndexAnnotation] != "0" || pods[0].Annotations[batchv1.JobIndexFailureCountAnnotation] != "1" {
		t.Fatalf("replacements: %+v", pods)
	}

	// Index 0 failed a second ago: it backs off; index 2 has never failed and starts.
	fx = newFixture(t, newJob(perIndexLimit(1), completions(3), parallel(3)),
		newPod("w0", corev1.PodFailed, index("0"), priorFailures("0"), finishedAgo(time.Second)),
		newPod("w1", corev1.PodRunning, index("1")))
	fx.sync(t, "ns/work")
	if pods := fx.created(t); len(pods) != 1 || pods[0].Annotations[batchv1.JobCompletionIndexAnnotation] != "2" {
		t.Fatalf("created %+v, want only index 2", pods)
	}

	// Every index done, one of them failed: the Job fails with FailedIndexes.
	done := newJob(perIndexLimit(0), completions(3), parallel(3))
	done.Status.CompletedIndexes, done.Status.Succeeded = "0,2", 2
	fx = newFixture(t, done, newPod("w1", corev1.PodFailed, index("1"), priorFailures("0"), finishedAgo(time.Hour)))
	fx.sync(t, "ns/work")
	if j := fx.job(t); !hasCondition(j, batchv1.JobFailed, batchv1.JobReasonFailedIndexes) {
		t.Fatalf("status: %+v", j.Status)
	}

	// maxFailedIndexes 0: the first failed index fails the Job at once.
	strict := newJob(perIndexLimit(0), completions(3), parallel(3), func(j *batchv1.Job) { j.Spec.MaxFailedIndexes = ptrTo(int32(0)) })
	fx = newFixture(t, strict, newPod("w1", corev1.PodFailed, index("1"), priorFailures("0"), finishedAgo(time.Hour)), newPod("w0", corev1.PodRunning, index("0")))
	fx.sync(t, "ns/work")
	if j := fx.job(t); !hasCondition(j, batchv1.JobFailureTarget, batchv1.JobReasonMaxFailedIndexesExceeded) {
		t.Fatalf("status: %+v", j.Status)
	}
	if !slices.Equal(fx.deleted(), []string{"w0"}) {
		t.Errorf("deleted %v", fx.deleted())
	}
}

// More successes than completions (pods that raced past the count) complete
// the Job with Kubernetes' TooManySucceededPods warning first.
func TestTooManySucceededPodsIsToldOfOnCompletion(t *testing.T) {
	j := newJob(completions(2), parallel(2))
	j.Status.Succeeded = 3
	fx := newFixture(t, j)
	fx.sync(t, "ns/work")
	if !hasCondition(fx.job(t), batchv1.JobComplete, "") {
		t.Fatalf("status: %+v", fx.job(t).Status)
	}
	got := events(fx)
	if !strings.Contains(got, "Warning TooManySucceededPods Too many succeeded pods running after completion count reached\nNormal Completed Job completed") {
		t.Errorf("events:\n%s", got)
	}
}

// A finished Job counts no more pods, as in Kubernetes: a pod it still had that fails afterwards
// (or goes on running) only loses its tracking finalizer.
func TestAFinishedJobOnlyReleasesItsRemainingPods(t *testing.T) {
	fx := newFixture(t, newJob(completions(1), parallel(2), completedAgo(time.Minute), func(j *batchv1.Job) { j.Status.Succeeded = 1 }),
		newPod("late", corev1.PodFailed, finishedAgo(time.Second)), newPod("run", corev1.PodRunning))
	fx.sync(t, "ns/work")
	j := fx.job(t)
	if u := j.Status.UncountedTerminatedPods; j.Status.Failed != 0 || j.Status.Succeeded != 1 || (u != nil && len(u.Failed)+len(u.Succeeded) > 0) {
		t.Fatalf("a finished Job counted a pod: %+v", j.Status)
	}
	for _, name := range []string{"late", "run"} {
		p, _ := fx.client.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
		if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
			t.Errorf("pod %s keeps its tracking finalizer", name)
		}
	}
}

// With backoffLimitPerIndex a failed pod keeps its tracking finalizer, uncounted, until its
// index's replacement exists, as Kubernetes delays it: the replacement takes the index's
// failure count from the failed pods in view, and were the failed pod deleted before, the
// count would start again.
func TestAFailedPodStaysUntilItsIndexIsReplaced(t *testing.T) {
	failed := newPod("w0", corev1.PodFailed, index("0"), priorFailures("1"), finishedAgo(time.Second))
	fx := newFixture(t, newJob(perIndexLimit(3), completions(2), parallel(2)), failed, newPod("w1", corev1.PodRunning, index("1")))
	fx.sync(t, "ns/work")
	if n := len(fx.created(t)); n != 0 {
		t.Fatalf("created %d pods during the back-off", n)
	}
	p, _ := fx.client.CoreV1().Pods("ns").Get(context.Background(), "w0", metav1.GetOptions{})
	if !slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
		t.Fatal("the failed pod lost its finalizer before its replacement exists")
	}
	if j := fx.job(t); j.Status.Failed != 0 || (j.Status.UncountedTerminatedPods != nil && len(j.Status.UncountedTerminatedPods.Failed) > 0) {
		t.Fatalf("the held pod is counted already: %+v", j.Status)
	}

	// Its replacement runs, carrying the count: the failed pod is counted and released.
	repl := newPod("w0b", corev1.PodRunning, index("0"), priorFailures("2"))
	fx = newFixture(t, newJob(perIndexLimit(3), completions(2), parallel(2)), failed, repl, newPod("w1", corev1.PodRunning, index("1")))
	fx.sync(t, "ns/work")
	if j := fx.job(t); j.Status.Failed != 1 {
		t.Fatalf("failed = %d, want 1", j.Status.Failed)
	}
	p, _ = fx.client.CoreV1().Pods("ns").Get(context.Background(), "w0", metav1.GetOptions{})
	if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
		t.Fatal("the replaced pod keeps its finalizer")
	}
}

// A held pod is counted before the Job fails: the verdict (here the active deadline) is first
// recorded, the pod released and counted on the next sync, and only then is the Job Failed.
func TestAJobFailsOnlyOnceItsHeldPodsAreCounted(t *testing.T) {
	failed := newPod("w0", corev1.PodFailed, index("0"), priorFailures("0"), finishedAgo(time.Second))
	fx := newFixture(t, newJob(perIndexLimit(3), completions(1), parallel(1), deadline(10), startedAgo(20*time.Second)), failed)
	fx.sync(t, "ns/work")
	j := fx.job(t)
	if !hasCondition(j, batchv1.JobFailureTarget, ReasonDeadlineExceeded) || hasCondition(j, batchv1.JobFailed, "") {
		t.Fatalf("after the first sync: %+v", j.Status.Conditions)
	}
	p, _ := fx.client.CoreV1().Pods("ns").Get(context.Background(), "w0", metav1.GetOptions{})
	fx = newFixture(t, j, p)
	fx.sync(t, "ns/work")
	j = fx.job(t)
	if !hasCondition(j, batchv1.JobFailed, ReasonDeadlineExceeded) || j.Status.Failed != 1 {
		t.Fatalf("after the second sync: failed %d, %+v", j.Status.Failed, j.Status.Conditions)
	}
}

// One sync records at most maxUncountedPods pods in status.uncountedTerminatedPods, as
// Kubernetes: the rest keep their finalizers for the next sync, and the Job does not finish
// before they are counted.
func TestUncountedTerminatedPodsAreCappedPerSync(t *testing.T) {
	objs := []runtime.Object{newJob(completions(maxUncountedPods+1), parallel(1))}
	for i := range maxUncountedPods + 1 {
		objs = append(objs, newPod(fmt.Sprintf("ok%03d", i), corev1.PodSucceeded))
	}
	fx := newFixture(t, objs...)
	fx.sync(t, "ns/work")
	for _, a := range controllertest.Filter(fx.client.Actions(), "update", "jobs") {
		if u := a.(k8stesting.UpdateAction).GetObject().(*batchv1.Job).Status.UncountedTerminatedPods; u != nil && len(u.Succeeded) > maxUncountedPods {
			t.Fatalf("a status write with %d uncounted pods", len(u.Succeeded))
		}
	}
	j := fx.job(t)
	if j.Status.Succeeded != maxUncountedPods || hasCondition(j, batchv1.JobComplete, "") {
		t.Fatalf("after the first sync: succeeded %d, %+v", j.Status.Succeeded, j.Status.Conditions)
	}
	held := 0
	for _, o := range objs[1:] {
		p, _ := fx.client.CoreV1().Pods("ns").Get(context.Background(), o.(*corev1.Pod).Name, metav1.GetOptions{})
		if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
			held++
		}
	}
	if held != 1 {
		t.Fatalf("%d pods keep their finalizer, want 1", held)
	}
	if n := len(fx.created(t)); n != 0 {
		t.Fatalf("created %d pods: the pod left for the next sync was taken for a missing one", n)
	}

	// The next sync counts the last one and completes the Job.
	pods, _ := fx.client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	objs = []runtime.Object{j}
	for i := range pods.Items {
		objs = append(objs, &pods.Items[i])
	}
	fx = newFixture(t, objs...)
	fx.sync(t, "ns/work")
	if j := fx.job(t); j.Status.Succeeded != maxUncountedPods+1 || !hasCondition(j, batchv1.JobComplete, "") {
		t.Fatalf("after the second sync: succeeded %d, %+v", j.Status.Succeeded, j.Status.Conditions)
	}
}

// One sync deletes at most maxPodChangesPerSync pods, as Kubernetes' MaxPodCreateDeletePerSync.
func TestPodDeletesAreCappedPerSync(t *testing.T) {
	objs := []runtime.Object{newJob(completions(1000), parallel(0))}
	for i := range maxPodChangesPerSync + 1 {
		objs = append(objs, newPod(fmt.Sprintf("run%03d", i), corev1.PodRunning))
	}
	fx := newFixture(t, objs...)
	fx.sync(t, "ns/work")
	if n := len(fx.deleted()); n != maxPodChangesPerSync {
		t.Fatalf("deleted %d pods, want %d", n, maxPodChangesPerSync)
	}
}

func suspendedSince(d time.Duration) jobOpt {
	return func(j *batchv1.Job) {
		j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{
			Type: batchv1.JobSuspended, Status: corev1.ConditionTrue, Reason: "JobSuspended", Message: "Job suspended",
			LastTransitionTime: metav1.NewTime(now.Add(-d)),
		})
	}
}

// On resumption the active deadline counts from then on, but, as in Kubernetes, only once the
// verdict is taken, which counts from the start before the suspension: a Job resumed past its
// deadline fails.
func TestResumptionRestartsTheActiveDeadlineAfterTheVerdict(t *testing.T) {
	fx := newFixture(t, newJob(deadline(600), startedAgo(2*time.Minute), suspendedSince(time.Minute)))
	fx.sync(t, "ns/work")
	j := fx.job(t)
	if c := condition(&j.Status, batchv1.JobSuspended); c == nil || c.Status != corev1.ConditionFalse || c.Reason != "JobResumed" {
		t.Fatalf("Suspended: %+v", c)
	}
	if !j.Status.StartTime.Time.Equal(now) || !strings.Contains(events(fx), "Normal Resumed Job resumed") {
		t.Fatalf("startTime %v, events:\n%s", j.Status.StartTime, events(fx))
	}

	fx = newFixture(t, newJob(deadline(60), startedAgo(2*time.Minute), suspendedSince(time.Minute)))
	fx.sync(t, "ns/work")
	j = fx.job(t)
	if !hasCondition(j, batchv1.JobFailureTarget, ReasonDeadlineExceeded) {
		t.Fatalf("resumed past the deadline: %+v", j.Status.Conditions)
	}
	if len(fx.created(t)) != 0 || strings.Contains(events(fx), ReasonResumed) {
		t.Fatalf("a Job resumed past its deadline started: created %d, events:\n%s", len(fx.created(t)), events(fx))
	}
}

// A condition whose reason or message changes is a new condition, as Kubernetes'
// ensureJobConditionStatus makes it: its lastTransitionTime is the change's.
func TestAConditionsNewReasonIsANewTransition(t *testing.T) {
	before := metav1.NewTime(now.Add(-time.Hour))
	st := &batchv1.JobStatus{Conditions: []batchv1.JobCondition{{
		Type: batchv1.JobSuspended, Status: corev1.ConditionTrue, Reason: "Old", Message: "old", LastProbeTime: before, LastTransitionTime: before,
	}}}
	if !setCondition(st, batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended", now) {
		t.Error("a new reason reported as no change")
	}
	if c := st.Conditions[0]; c.Reason != "JobSuspended" || c.Message != "Job suspended" || !c.LastTransitionTime.Time.Equal(now) || !c.LastProbeTime.Time.Equal(now) {
		t.Errorf("condition: %+v", c)
	}
	if setCondition(st, batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended", now.Add(time.Minute)) || !st.Conditions[0].LastTransitionTime.Time.Equal(now) {
		t.Errorf("an unchanged condition was rewritten: %+v", st.Conditions[0])
	}
	if setCondition(st, batchv1.JobFailed, corev1.ConditionFalse, "", "", now) || len(st.Conditions) != 1 {
		t.Errorf("an absent condition was added as False: %+v", st.Conditions)
	}
}

// As Kubernetes' updatePod: a resync queues nothing, a pod leaving its Job wakes that Job, and
// an orphan wakes the Jobs whose selector matches it (one that may adopt it).
func TestPodUpdatesQueueTheJobsConcerned(t *testing.T) {
	other := newJob(func(j *batchv1.Job) {
		j.Name, j.UID = "manual", "uid-manual"
		j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"batch": "nightly"}}
	})
	drain := func(fx *fixture) []string {
		var out []string
		for fx.c.queue.Len() > 0 {
			k, _ := fx.c.queue.Get()
			fx.c.queue.Done(k)
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		name string
		cur  func(*corev1.Pod)
		want []string
	}{
		{"a resync", nil, nil},
		{"a status change", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, []string{"ns/work"}},
		{"orphaned and relabelled", func(p *corev1.Pod) {
			p.OwnerReferences, p.Finalizers, p.Labels = nil, nil, map[string]string{"batch": "nightly"}
		}, []string{"ns/manual", "ns/work"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, newJob(), other)
			old := newPod("a", corev1.PodRunning)
			cur := old.DeepCopy()
			if tc.cur != nil {
				tc.cur(cur)
				cur.ResourceVersion = "2"
			}
			fx.c.podUpdated(old, cur)
			if got := drain(fx); !slices.Equal(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
		})
	}
}

// Of two pods of one index Kubernetes keeps the most advanced (the last in ActivePods order), not
// the oldest: a pending duplicate goes, the running one stays.
func TestIndexedJobKeepsTheMostAdvancedDuplicate(t *testing.T) {
	fx := newFixture(t, newJob(indexedMode, completions(2), parallel(2)),
		newPod("stuck", corev1.PodPending, index("0"), func(p *corev1.Pod) { p.Spec.NodeName = "" }),
		newPod("runs", corev1.PodRunning, index("0"), func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now) }))
	fx.sync(t, "ns/work")
	if !slices.Equal(fx.deleted(), []string{"stuck"}) {
		t.Errorf("deleted %v, want the pending duplicate of index 0", fx.deleted())
	}
}

// A finished Job adopts nothing and deletes nothing, as in Kubernetes (syncJob returns
// at once for a finished Job): a pod started by hand that matches its selector is left
// alone, unowned and without the tracking finalizer, and a pod it still owns runs on.
func TestAFinishedJobAdoptsAndDeletesNothing(t *testing.T) {
	stranger := newPod("stranger", corev1.PodRunning, func(p *corev1.Pod) {
		p.OwnerReferences, p.Finalizers = nil, nil
	})
	fx := newFixture(t, newJob(completions(1), parallel(2), completedAgo(time.Minute), func(j *batchv1.Job) { j.Status.Succeeded = 1 }),
		newPod("run", corev1.PodRunning), stranger)
	fx.sync(t, "ns/work")
	for _, name := range []string{"run", "stranger"} {
		p, err := fx.client.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pod %s: %v (a finished Job deleted it)", name, err)
		}
		if p.DeletionTimestamp != nil {
			t.Errorf("pod %s is being deleted by a finished Job", name)
		}
		if name == "stranger" && (len(p.OwnerReferences) != 0 || len(p.Finalizers) != 0) {
			t.Errorf("a finished Job adopted %s: owners %v, finalizers %v", name, p.OwnerReferences, p.Finalizers)
		}
	}
}

// An Indexed Job cut short by maxUncountedPods records its lowest completed indexes first, as
// Kubernetes does, whatever order the cache lists the pods in: completedIndexes is one range.
func TestIndexedJobCappedSyncRecordsTheLowestIndexes(t *testing.T) {
	objs := []runtime.Object{newJob(indexedMode, completions(maxUncountedPods+1), parallel(1))}
	for i := range maxUncountedPods + 1 {
		objs = append(objs, newPod(fmt.Sprintf("ok%03d", i), corev1.PodSucceeded, index(fmt.Sprint(i))))
	}
	fx := newFixture(t, objs...)
	fx.sync(t, "ns/work")
	want := fmt.Sprintf("0-%d", maxUncountedPods-1)
	if j := fx.job(t); j.Status.CompletedIndexes != want || j.Status.Succeeded != maxUncountedPods {
		t.Fatalf("completedIndexes %q (succeeded %d), want %q", j.Status.CompletedIndexes, j.Status.Succeeded, want)
	}
	last, _ := fx.client.CoreV1().Pods("ns").Get(context.Background(), fmt.Sprintf("ok%03d", maxUncountedPods), metav1.GetOptions{})
	if !slices.Contains(last.Finalizers, batchv1.JobTrackingFinalizer) {
		t.Fatal("the pod of the highest index lost its finalizer: it was counted before a lower one")
	}
}

// A Job created suspended with completions=0 has nothing to run: it completes at once, without
// ever starting (no startTime), as in Kubernetes, whose status rules let such a Job finish
// without a startTime (kubernetes#132614).
func TestASuspendedJobWithNoCompletionsCompletesWithoutStarting(t *testing.T) {
	fx := newFixture(t, newJob(suspend, completions(0), func(j *batchv1.Job) { j.Status.StartTime = nil }))
	fx.sync(t, "ns/work")
	j := fx.job(t)
	if !hasCondition(j, batchv1.JobComplete, "") || !hasCondition(j, batchv1.JobSuccessCriteriaMet, "") || j.Status.CompletionTime == nil {
		t.Fatalf("status %+v, want Complete with SuccessCriteriaMet and a completion time", j.Status)
	}
	if j.Status.StartTime != nil {
		t.Errorf("startTime %v, want none: the Job never ran", j.Status.StartTime)
	}
}

// A pod of an index that has failed already (a pod of it that was
// terminating) and then succeeds does not make the index completed too: an
// index once failed stays failed, and the API server refuses a status whose
// completedIndexes overlap its failedIndexes, so counting it would leave
// the Job's status unwritable. The pod only loses its tracking finalizer.
func TestASucceededPodOfAFailedIndexLeavesItFailed(t *testing.T) {
	j := newJob(perIndexLimit(0), completions(3), parallel(3))
	j.Status.FailedIndexes = ptrTo("1")
	fx := newFixture(t, j,
		newPod("late", corev1.PodSucceeded, index("1")),
		newPod("w0", corev1.PodSucceeded, index("0")),
		newPod("w2", corev1.PodRunning, index("2")))
	fx.sync(t, "ns/work")
	got := fx.job(t)
	if got.Status.CompletedIndexes != "0" || got.Status.Succeeded != 1 || got.Status.FailedIndexes == nil || *got.Status.FailedIndexes != "1" {
		t.Fatalf("status: completed %q (%d), failed %v", got.Status.CompletedIndexes, got.Status.Succeeded, got.Status.FailedIndexes)
	}
	p, _ := fx.client.CoreV1().Pods("ns").Get(context.Background(), "late", metav1.GetOptions{})
	if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
		t.Errorf("the late pod keeps its tracking finalizer")
	}
}

// Index lists from the stored status are read whatever they hold (a status
// written before the API server checked them, or by another writer): an
// index past completions, however large, is no index, including one that
// wraps around to a small or negative number in 32 bits, and a range past
// completions costs no more than completions.
func TestIndexesPastCompletionsIgnored(t *testing.T) {
	for in, want := range map[string]string{
		"4294967296":            "",    // 2^32: 0 in 32 bits
		"4294967297,1":          "1",   // 2^32+1: 1 in 32 bits
		"2147483648":            "",    // 2^31: negative in 32 bits
		"4294967290-4294967299": "",    // wraps from -6 through 3
		"2-4294967299":          "2-4", // bounded by completions
		"9223372036854775807":   "",
		"2147483648-4294967295": "", // 2^31 steps (and as many set entries) before
	} {
		if got := formatIndexes(parseIndexes(in, 5)); got != want {
			t.Errorf("%q → %q, want %q", in, got, want)
		}
	}
}

// A stored completedIndexes holding an index that wraps to 0 in 32 bits does
// not complete an Indexed Job whose index 0 never ran.
func TestIndexedJobNotCompletedByAWrappingIndex(t *testing.T) {
	j := newJob(indexedMode, completions(1), parallel(1))
	j.Status.CompletedIndexes = "4294967296"
	fx := newFixture(t, j, newPod("w0", corev1.PodRunning, index("0")))
	fx.sync(t, "ns/work")
	if j := fx.job(t); hasCondition(j, batchv1.JobComplete, "") || hasCondition(j, batchv1.JobSuccessCriteriaMet, "") || j.Status.Succeeded != 0 {
		t.Fatalf("a Job whose only index is running finished: %+v", j.Status)
	}
}

// A failed pod that is gone (deleted, its tracking finalizer removed, as a
// pod deleted by hand or evicted goes within seconds) still holds back its
// replacement for the failure's back-off, as Kubernetes' back-off record,
// kept by the controller, does; it was replaced at once.
func TestABackOffOutlivesTheFailedPod(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		// pending: the sync that counts the failure waits for an earlier creation to be
		// observed, so it creates nothing and the next one no longer sees the pod.
		pending bool
	}{
		{"deleted while running", newPod("going", corev1.PodRunning, func(p *corev1.Pod) {
			ts := metav1.NewTime(now)
			p.DeletionTimestamp = &ts
		}), false},
		{"failed", newPod("bad", corev1.PodFailed, finishedAgo(0)), false},
		{"failed, seen while a creation is pending", newPod("bad", corev1.PodFailed, finishedAgo(0)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, newJob(backoffLim(3)), tc.pod)
			if tc.pending {
				fx.c.exp.ExpectCreations("ns/work", 1)
			}
			fx.sync(t, "ns/work")
			if tc.pending {
				fx.c.exp.CreationObserved("ns/work")
			}
			if n := len(fx.created(t)); n != 0 {
				t.Fatalf("created %d pods inside the back-off", n)
			}
			if j := fx.job(t); j.Status.Failed != 1 {
				t.Fatalf("failed = %d, want 1", j.Status.Failed)
			}
			// The pod goes; the Job's copy catches up before each sync.
			if err := fx.pods.GetStore().Delete(tc.pod); err != nil {
				t.Fatal(err)
			}
			for _, at := range []time.Duration{time.Second, 9 * time.Second} {
				fx.c.now = func() time.Time { return now.Add(at) }
				controllertest.Load(t, fx.jobs, fx.job(t))
				fx.client.ClearActions()
				fx.sync(t, "ns/work")
				if n := len(fx.created(t)); n != 0 {
					t.Fatalf("%s after the failure, with the pod gone: created %d pods inside the 10s back-off", at, n)
				}
			}
			fx.c.now = func() time.Time { return now.Add(11 * time.Second) }
			controllertest.Load(t, fx.jobs, fx.job(t))
			fx.sync(t, "ns/work")
			if n := len(fx.created(t)); n != 1 {
				t.Fatalf("11s after the failure: created %d pods, want 1", n)
			}
		})
	}
}

// As Kubernetes, whose sync starts by giving a Job an empty
// uncountedTerminatedPods, every status the controller writes carries one,
// also before any pod has terminated (`uncountedTerminatedPods: {}` in
// kubectl get -o yaml); it was missing until a pod finished.
func TestStatusAlwaysCarriesUncountedTerminatedPods(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  *batchv1.Job
		pods []runtime.Object
	}{
		{"new", newJob(completions(2), parallel(2)), nil},
		{"suspended", newJob(suspend), []runtime.Object{newPod("run", corev1.PodRunning)}},
		{"running", newJob(), []runtime.Object{newPod("run", corev1.PodRunning)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, append([]runtime.Object{tc.job}, tc.pods...)...)
			fx.sync(t, "ns/work")
			if j := fx.job(t); j.Status.UncountedTerminatedPods == nil {
				t.Fatalf("status without uncountedTerminatedPods: %+v", j.Status)
			}
		})
	}
}

// A Job deleted while a sync is under way (its Delete event handled between
// the sync's read of the Job and its notes of the pods) leaves nothing in the
// back-off memory once the sync the deletion queued has found it gone, as
// Kubernetes' controller drops its back-off record when a sync finds the Job
// gone; the memory kept an entry per such Job for the controller's lifetime.
func TestADeletedJobLeavesNoBackOffMemory(t *testing.T) {
	job := newJob(backoffLim(3))
	fx := newFixture(t, job, newPod("bad", corev1.PodFailed, finishedAgo(0)))
	deleted := false
	fx.client.PrependReactor("update", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		if !deleted { // the first status write: the Job goes meanwhile
			deleted = true
			if err := fx.jobs.GetStore().Delete(job); err != nil {
				t.Fatal(err)
			}
			fx.c.jobDeleted(job)
		}
		return false, nil, nil
	})
	fx.sync(t, "ns/work")
	if !deleted {
		t.Fatal("the sync wrote no status")
	}
	fx.sync(t, "ns/work") // the one the deletion queued
	if n := fx.c.failures.len(); n != 0 {
		t.Fatalf("back-off memory holds %d Jobs after the only one was deleted", n)
	}
}

// Pods the controller deletes because there are too many (or the Job is
// suspended) lose their tracking finalizer first and are no failures: as in
// Kubernetes, whose back-off record takes only the newly finished pods still
// tracked, they do not hold back the pods created later. Remembered, they
// delayed a Job's scale-up by their back-off (20s for two) after a success.
func TestReleasedPodsDoNotBackOffLaterCreations(t *testing.T) {
	par := func(n int32) jobOpt { return func(j *batchv1.Job) { j.Spec.Parallelism = &n } }
	ok := newPod("ok", corev1.PodSucceeded, finishedAgo(time.Minute), func(p *corev1.Pod) { p.Finalizers = nil })
	counted := func(j *batchv1.Job) { j.Status.Succeeded = 1 }
	running := []runtime.Object{newPod("a", corev1.PodRunning), newPod("b", corev1.PodRunning), newPod("c", corev1.PodRunning)}
	fx := newFixture(t, append([]runtime.Object{newJob(completions(5), par(1), counted), ok}, running...)...)
	fx.sync(t, "ns/work")
	gone := fx.deleted()
	if len(gone) != 2 {
		t.Fatalf("deleted %v, want two of three", gone)
	}
	if n := len(controllertest.Filter(fx.client.Actions(), "patch", "pods")); n != 2 {
		t.Fatalf("%d pods released, want the two deleted", n)
	}
	// The informer shows them terminating, released, then gone.
	for _, name := range gone {
		obj, _, _ := fx.pods.GetStore().GetByKey("ns/" + name)
		p := obj.(*corev1.Pod).DeepCopy()
		ts := metav1.NewTime(now)
		p.DeletionTimestamp, p.Finalizers = &ts, nil
		controllertest.Load(t, fx.pods, p)
	}
	controllertest.Load(t, fx.jobs, fx.job(t))
	fx.c.exp.Forget("ns/work")
	fx.client.ClearActions()
	fx.sync(t, "ns/work")
	for _, name := range gone {
		if err := fx.pods.GetStore().Delete(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	// Parallelism back to 3: two pods are created at once.
	j := fx.job(t)
	j.Spec.Parallelism = ptrTo(int32(3))
	controllertest.Load(t, fx.jobs, j)
	fx.client.ClearActions()
	fx.c.now = func() time.Time { return now.Add(time.Second) }
	fx.sync(t, "ns/work")
	if n := len(fx.created(t)); n != 2 {
		t.Fatalf("created %d pods, want 2 at once: the deleted excess pods are no failures", n)
	}
}
