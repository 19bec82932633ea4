package job

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/skiffkube/skiff/controllers/controllertest"
	"github.com/skiffkube/skiff/controllers/runner"
)

// Behaviours checked against kube-controller-manager's Job controller
// (pkg/controller/job).

// The pod-failure back-off is capped at 10 minutes.
func TestPodFailureBackoffCap(t *testing.T) {
	if d := backoffDelay(DefaultBackoff, 7); d != 10*time.Minute {
		t.Errorf("seventh back-off = %s, want 10m (10s doubled six times is 640s, capped)", d)
	}
	if d := backoffDelay(DefaultBackoff, 6); d != 320*time.Second {
		t.Errorf("sixth back-off = %s, want 5m20s", d)
	}
}

// With restartPolicy OnFailure pods do not fail, their containers restart: the
// restarts of the running pods count against the backoff limit.
func TestRestartPolicyOnFailureRestartsCountAgainstBackoffLimit(t *testing.T) {
	onFailure := func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure }
	restarts := func(n int32) podOpt {
		return func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: n}}
		}
	}
	for _, tc := range []struct {
		name     string
		limit    int32
		restarts int32
		fail     bool
	}{
		{"below the limit", 3, 2, false},
		{"at the limit", 3, 3, true},
		{"limit 0, one restart", 0, 1, true},
		{"limit 0, none", 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, newJob(onFailure, backoffLim(tc.limit)), newPod("run", corev1.PodRunning, restarts(tc.restarts)))
			fx.sync(t, "ns/work")
			c := condition(&fx.job(t).Status, batchv1.JobFailureTarget)
			if failed := c != nil && c.Status == corev1.ConditionTrue; failed != tc.fail {
				t.Fatalf("failing = %v, want %v (conditions %+v)", failed, tc.fail, fx.job(t).Status.Conditions)
			}
			if tc.fail && (c.Reason != ReasonBackoffLimitExceeded || c.Message != "Job has reached the specified backoff limit") {
				t.Errorf("condition: %+v", c)
			}
			if tc.fail && !slices.Equal(fx.deleted(), []string{"run"}) {
				t.Errorf("deleted %v", fx.deleted())
			}
		})
	}
}

// Pods deleted because there are too many (parallelism lowered, a duplicate
// index) lose their tracking finalizer before they are deleted: they are not
// failures and never count against the backoff limit.
func TestExcessPodsAreNotCountedAsFailed(t *testing.T) {
	fx := newFixture(t, newJob(completions(5), parallel(1), backoffLim(0)),
		newPod("old", corev1.PodRunning), newPod("new", corev1.PodRunning, func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now) }))
	fx.sync(t, "ns/work")
	if !slices.Equal(fx.deleted(), []string{"new"}) {
		t.Fatalf("deleted %v, want the newer pod", fx.deleted())
	}
	patched := false
	for _, a := range fx.client.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "pods" && a.(k8stesting.PatchAction).GetName() == "new" {
			patched = true
		}
		if a.GetVerb() == "delete" && a.GetResource().Resource == "pods" && !patched {
			t.Fatal("the excess pod was deleted before its tracking finalizer was removed")
		}
	}
	// The next sync sees it terminating (the informer may still show the finalizer).
	ts := metav1.NewTime(now)
	dying := newPod("new", corev1.PodRunning, func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now); p.DeletionTimestamp = &ts })
	controllertest.Load(t, fx.pods, dying)
	controllertest.Load(t, fx.jobs, fx.job(t))
	fx.sync(t, "ns/work")
	j := fx.job(t)
	if j.Status.Failed != 0 || hasCondition(j, batchv1.JobFailureTarget, "") || hasCondition(j, batchv1.JobFailed, "") {
		t.Fatalf("a pod deleted for scale-down counted as a failure: %+v", j.Status)
	}
}

// A Job that fails first gets FailureTarget, its running pods are deleted and
// counted as failed, and only once none is left terminating does it get the
// Failed condition (and the Warning event), as Kubernetes since v1.31.
func TestFailedConditionWaitsForPodsToTerminate(t *testing.T) {
	fx := newFixture(t, newJob(deadline(10), startedAgo(20*time.Second)), newPod("run", corev1.PodRunning))
	fx.sync(t, "ns/work")
	j := fx.job(t)
	if c := condition(&j.Status, batchv1.JobFailureTarget); c == nil || c.Status != corev1.ConditionTrue ||
		c.Reason != ReasonDeadlineExceeded || c.Message != "Job was active longer than specified deadline" {
		t.Fatalf("FailureTarget: %+v", c)
	}
	if hasCondition(j, batchv1.JobFailed, "") {
		t.Fatal("Failed set while the pod is still terminating")
	}
	if !slices.Equal(fx.deleted(), []string{"run"}) || j.Status.Active != 0 {
		t.Fatalf("deleted %v, active %d", fx.deleted(), j.Status.Active)
	}
	if strings.Contains(events(fx), ReasonDeadlineExceeded) {
		t.Errorf("failure event before the Job failed: %s", events(fx))
	}

	// The pod is terminating, its finalizer still on: it counts as a failure.
	ts := metav1.NewTime(now)
	dying := newPod("run", corev1.PodRunning, func(p *corev1.Pod) { p.DeletionTimestamp = &ts })
	fx = newFixture(t, j, dying)
	fx.sync(t, "ns/work")
	j = fx.job(t)
	if j.Status.Failed != 1 {
		t.Fatalf("failed = %d, want 1 (the pod killed at the deadline)", j.Status.Failed)
	}
	if hasCondition(j, batchv1.JobFailed, "") || j.Status.Terminating == nil || *j.Status.Terminating != 1 {
		t.Fatalf("while the pod terminates: %+v", j.Status)
	}

	// The pod is gone: the Job has failed.
	fx = newFixture(t, j)
	fx.sync(t, "ns/work")
	j = fx.job(t)
	c := condition(&j.Status, batchv1.JobFailed)
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason != ReasonDeadlineExceeded || c.Message != "Job was active longer than specified deadline" {
		t.Fatalf("Failed: %+v", c)
	}
	if !hasCondition(j, batchv1.JobFailureTarget, ReasonDeadlineExceeded) || j.Status.Failed != 1 || j.Status.CompletionTime != nil {
		t.Fatalf("status: %+v", j.Status)
	}
	if !strings.Contains(events(fx), "Warning DeadlineExceeded Job was active longer than specified deadline") {
		t.Errorf("events: %s", events(fx))
	}
}

// The back-off before a replacement counts the failures since the last
// success, not all of the Job's failures.
func TestBackoffCountsFailuresSinceTheLastSuccess(t *testing.T) {
	succeededAgo := func(d time.Duration) podOpt {
		return func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(now.Add(-d))},
			}}}
		}
	}
	released := func(p *corev1.Pod) { p.Finalizers = nil }
	j := newJob(completions(5), parallel(1), func(j *batchv1.Job) { j.Status.Failed, j.Status.Succeeded = 4, 1 })
	// Three failures, then a success a minute ago, then one failure 15s ago: one failure
	// since the success, a 10s back-off, over.
	fx := newFixture(t, j,
		newPod("f1", corev1.PodFailed, finishedAgo(5*time.Minute), released),
		newPod("f2", corev1.PodFailed, finishedAgo(4*time.Minute), released),
		newPod("f3", corev1.PodFailed, finishedAgo(3*time.Minute), released),
		newPod("ok", corev1.PodSucceeded, succeededAgo(time.Minute), released),
		newPod("f4", corev1.PodFailed, finishedAgo(15*time.Second), released))
	fx.sync(t, "ns/work")
	if n := len(fx.created(t)); n != 1 {
		t.Fatalf("created %d pods, want 1: one failure since the last success means a 10s back-off", n)
	}
}

// A failed pod without container statuses (rejected at admission, say) failed
// when its Ready condition turned false, not when it was created.
func TestBackoffTakesTheFailureTimeFromTheReadyCondition(t *testing.T) {
	notReady := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now.Add(-2 * time.Second))}}
	}
	fx := newFixture(t, newJob(), newPod("bad", corev1.PodFailed, notReady))
	fx.sync(t, "ns/work")
	if n := len(fx.created(t)); n != 0 {
		t.Fatalf("created %d pods 2s after a failure", n)
	}
}

// Once the success of a Job is recorded (SuccessCriteriaMet), Kubernetes evaluates no failure any
// more: the pods deleted after it may fail on the way out or outlive the active deadline, and the
// Job still ends Complete.
func TestSuccessCriteriaMetIsNotTurnedIntoAFailure(t *testing.T) {
	leaderOnly := "0"
	policy := func(j *batchv1.Job) {
		j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: &leaderOnly}}}
	}
	failOnAnyExit := failurePolicy(batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailJob,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{0}}})
	met := func(j *batchv1.Job) {
		j.Status.CompletedIndexes = "0"
		j.Status.Succeeded = 1
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue,
			Reason: batchv1.JobReasonSuccessPolicy, Message: "Matched rules at index 0"}}
	}
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Second)} }

	for name, tc := range map[string]struct {
		job  *batchv1.Job
		pods []runtime.Object
	}{
		"a worker killed after the success": {
			newJob(indexedMode, completions(2), parallel(2), policy, failOnAnyExit, met),
			[]runtime.Object{newPod("w0", corev1.PodSucceeded, index("0")), newPod("w1", corev1.PodFailed, index("1"), exitCode(143), deleting)},
		},
		"the active deadline passing while a worker terminates": {
			newJob(indexedMode, completions(2), parallel(2), policy, met, deadline(60), startedAgo(2*time.Minute)),
			[]runtime.Object{newPod("w0", corev1.PodSucceeded, index("0")), newPod("w1", corev1.PodRunning, index("1"), deleting)},
		},
	} {
		t.Run(name, func(t *testing.T) {
			fx := newFixture(t, append([]runtime.Object{tc.job}, tc.pods...)...)
			fx.sync(t, "ns/work")
			// A second sync sees the status the first one wrote.
			fx = newFixture(t, append([]runtime.Object{fx.job(t)}, tc.pods...)...)
			fx.sync(t, "ns/work")
			j := fx.job(t)
			if hasCondition(j, batchv1.JobFailureTarget, "") || hasCondition(j, batchv1.JobFailed, "") {
				t.Fatalf("a succeeded Job failed: %+v", j.Status.Conditions)
			}
			if strings.Contains(events(fx), "Warning") {
				t.Errorf("events: %s", events(fx))
			}
		})
	}
}

// Pods are created in slow-start batches (1, 2, 4, …) that stop at the first failure, as in
// Kubernetes: a namespace out of quota costs one refused create and one FailedCreate event per
// sync, not one per missing pod.
func TestPodCreationSlowStartStopsAtTheFirstFailure(t *testing.T) {
	fx := newFixture(t, newJob(completions(20), parallel(10)))
	fx.client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("exceeded quota"))
	})
	if err := fx.c.sync(context.Background(), "ns/work"); err == nil {
		t.Fatal("sync reported no error for refused creates")
	}
	if n := len(controllertest.Filter(fx.client.Actions(), "create", "pods")); n != 1 {
		t.Errorf("%d create calls, want 1", n)
	}
	if n := strings.Count(events(fx), ReasonFailedCreate); n != 1 {
		t.Errorf("%d FailedCreate events, want 1:\n%s", n, events(fx))
	}
	if !fx.c.exp.Satisfied("ns/work") {
		t.Error("expectations wait for pods that were never created")
	}

	// Creates that succeed go on in growing batches up to parallelism.
	fx = newFixture(t, newJob(completions(20), parallel(10)))
	fx.sync(t, "ns/work")
	if n := len(fx.created(t)); n != 10 {
		t.Errorf("created %d pods, want 10", n)
	}
}

// A pod the Job adopts (left behind by a Job deleted with --cascade=orphan, say) gets the tracking
// finalizer in the adopting patch, as in Kubernetes, so its success or failure is counted rather
// than its work done again.
func TestAdoptedPodGetsTheTrackingFinalizerAndCounts(t *testing.T) {
	orphan := newPod("left", corev1.PodSucceeded, noOwner, func(p *corev1.Pod) { p.Finalizers = []string{"example.com/keep"} })
	fx := newFixture(t, newJob(completions(2), parallel(2)), orphan)
	fx.sync(t, "ns/work")
	patches := controllertest.Filter(fx.client.Actions(), "patch", "pods")
	if len(patches) == 0 {
		t.Fatal("orphan not adopted")
	}
	adopt := string(patches[0].(k8stesting.PatchAction).GetPatch())
	if !strings.Contains(adopt, `"finalizers":["example.com/keep","`+batchv1.JobTrackingFinalizer+`"]`) || !strings.Contains(adopt, `"resourceVersion":"1"`) {
		t.Errorf("adopt patch = %s", adopt)
	}
	j := fx.job(t)
	if got := countsOf(&j.Status).succeeded; got != 1 {
		t.Errorf("adopted succeeded pod counted %d times, want 1: %+v", got, j.Status)
	}
	if n := len(fx.created(t)); n != 1 {
		t.Errorf("created %d pods, want 1", n)
	}
	p, err := fx.client.CoreV1().Pods("ns").Get(context.Background(), "left", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Finalizers, []string{"example.com/keep"}) {
		t.Errorf("finalizers after counting: %v", p.Finalizers)
	}
}

// A Job whose spec.managedBy names another controller (MultiKueue, say) is left to it, as in
// Kubernetes: no pods, no adoption, no status; the TTL after it finishes still applies.
func TestJobManagedByAnotherControllerIsLeftAlone(t *testing.T) {
	other := func(j *batchv1.Job) { j.Spec.ManagedBy = ptrTo("kueue.x-k8s.io/multikueue") }
	fx := newFixture(t, newJob(other, completions(3), parallel(3), deadline(1), startedAgo(time.Hour)),
		newPod("stray", corev1.PodFailed, noOwner))
	fx.sync(t, "ns/work")
	if acts := fx.client.Actions(); len(acts) != 0 {
		t.Fatalf("acted on a Job managed elsewhere: %v", acts)
	}

	fx = newFixture(t, newJob(other, completedAgo(time.Hour), ttl(60)))
	fx.sync(t, "ns/work")
	if len(controllertest.Filter(fx.client.Actions(), "delete", "jobs")) != 1 {
		t.Error("finished Job past its TTL not deleted")
	}

	// The built-in controller's own name is no hand-off.
	fx = newFixture(t, newJob(func(j *batchv1.Job) { j.Spec.ManagedBy = ptrTo(batchv1.JobControllerName) }))
	fx.sync(t, "ns/work")
	if len(fx.created(t)) != 1 {
		t.Error("Job managed by the job controller got no pod")
	}
}

// Lowering the parallelism of a running Indexed Job deletes the pods over it, as in Kubernetes
// (the newest first here), without counting them as failures; their indexes run again later.
func TestIndexedJobScalesDownWhenParallelismIsLowered(t *testing.T) {
	newer := func(d time.Duration) podOpt {
		return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now.Add(-d)) }
	}
	fx := newFixture(t, newJob(indexedMode, completions(6), parallel(2)),
		newPod("w0", corev1.PodRunning, index("0"), newer(4*time.Minute)), newPod("w1", corev1.PodRunning, index("1"), newer(3*time.Minute)),
		newPod("w2", corev1.PodRunning, index("2"), newer(2*time.Minute)), newPod("w3", corev1.PodRunning, index("3"), newer(time.Minute)))
	fx.sync(t, "ns/work")
	deleted := fx.deleted()
	slices.Sort(deleted)
	if !slices.Equal(deleted, []string{"w2", "w3"}) {
		t.Fatalf("deleted %v, want [w2 w3]", deleted)
	}
	if n := len(fx.created(t)); n != 0 {
		t.Errorf("created %d pods while scaling down", n)
	}
	for _, name := range deleted {
		p, err := fx.client.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
			t.Errorf("%s deleted with its tracking finalizer: it would count as failed", name)
		}
	}
	if j := fx.job(t); j.Status.Failed != 0 {
		t.Errorf("failed = %d, want 0", j.Status.Failed)
	}
}

// With backoffLimitPerIndex, a failure the pod failure policy ignores is not counted against the
// index's limit but is counted in batch.kubernetes.io/job-index-ignored-failure-count, and the
// index backs off on both counts, as in Kubernetes.
func TestPerIndexIgnoredFailuresBackOffAndAreCarried(t *testing.T) {
	ignoreDisruptions := failurePolicy(batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}}})
	evicted := newPod("w0", corev1.PodFailed, index("0"), priorFailures("1"), exitCode(137), func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}
	})
	job := newJob(perIndexLimit(1), completions(1), parallel(1), ignoreDisruptions)

	// Failed a second ago, the second failure of the index (one counted, one ignored): 20s back-off.
	fx := newFixture(t, job, evicted)
	fx.c.now = func() time.Time { return now.Add(15 * time.Second) }
	fx.sync(t, "ns/work")
	if n := len(fx.created(t)); n != 0 {
		t.Fatalf("index replaced %d times within its back-off", n)
	}

	fx = newFixture(t, job, evicted)
	fx.c.now = func() time.Time { return now.Add(20 * time.Second) }
	fx.sync(t, "ns/work")
	pods := fx.created(t)
	if len(pods) != 1 {
		t.Fatalf("created %d pods after the back-off, want 1", len(pods))
	}
	if a := pods[0].Annotations; a[batchv1.JobIndexFailureCountAnnotation] != "1" || a[batchv1.JobIndexIgnoredFailureCountAnnotation] != "1" {
		t.Errorf("replacement annotations: %v", a)
	}
	if j := fx.job(t); j.Status.FailedIndexes != nil && *j.Status.FailedIndexes != "" {
		t.Errorf("an ignored failure failed the index: %q", *j.Status.FailedIndexes)
	}
}

// A refused pod deletion is told of with Kubernetes' FailedDelete warning.
func TestRefusedPodDeletionIsAFailedDeleteEvent(t *testing.T) {
	fx := newFixture(t, newJob(completions(1), parallel(1), suspend), newPod("w0", corev1.PodRunning))
	fx.client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "w0", errors.New("denied by webhook"))
	})
	if err := fx.c.sync(context.Background(), "ns/work"); err == nil {
		t.Fatal("sync reported no error for a refused delete")
	}
	if ev := events(fx); !strings.Contains(ev, "Warning FailedDelete Error deleting: ") || !strings.Contains(ev, "denied by webhook") {
		t.Errorf("events:\n%s", ev)
	}
}

// status.active, ready and terminating reflect the pods a sync creates and deletes at once, as
// Kubernetes reports them: a suspended Job shows no active pod as soon as they are deleted, a
// new one its pods as soon as they are created.
func TestStatusCountsThePodsASyncCreatesAndDeletes(t *testing.T) {
	ready := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	fx := newFixture(t, newJob(completions(4), parallel(2), suspend), newPod("w0", corev1.PodRunning, ready), newPod("w1", corev1.PodRunning))
	fx.sync(t, "ns/work")
	st := fx.job(t).Status
	if st.Active != 0 || st.Ready == nil || *st.Ready != 0 || st.Terminating == nil || *st.Terminating != 2 {
		t.Errorf("suspended: active %d, ready %v, terminating %v; want 0, 0, 2", st.Active, ptrValue(st.Ready), ptrValue(st.Terminating))
	}

	fx = newFixture(t, newJob(completions(4), parallel(3)))
	fx.sync(t, "ns/work")
	if st := fx.job(t).Status; st.Active != 3 {
		t.Errorf("started: active %d, want 3", st.Active)
	}
}

func ptrValue(p *int32) any {
	if p == nil {
		return nil
	}
	return *p
}

// When an elastic Indexed Job's completions are lowered, the indexes past them no longer count:
// Kubernetes drops them from status.completedIndexes and status.succeeded.
func TestLoweredCompletionsDropCompletedIndexesPastThem(t *testing.T) {
	shrunk := newJob(indexedMode, completions(2), parallel(2), func(j *batchv1.Job) {
		j.Status.CompletedIndexes, j.Status.Succeeded = "0,3", 2
	})
	fx := newFixture(t, shrunk, newPod("w0", corev1.PodSucceeded, index("0"), func(p *corev1.Pod) { p.Finalizers = nil }),
		newPod("w1", corev1.PodRunning, index("1")))
	fx.sync(t, "ns/work")
	j := fx.job(t)
	if j.Status.CompletedIndexes != "0" || j.Status.Succeeded != 1 || finished(j) {
		t.Fatalf("completedIndexes %q, succeeded %d, finished %v; want \"0\", 1, unfinished", j.Status.CompletedIndexes, j.Status.Succeeded, finished(j))
	}

	fx = newFixture(t, shrunk, newPod("w0", corev1.PodSucceeded, index("0"), func(p *corev1.Pod) { p.Finalizers = nil }),
		newPod("w1", corev1.PodSucceeded, index("1")))
	fx.sync(t, "ns/work")
	if j := fx.job(t); !hasCondition(j, batchv1.JobComplete, "") || j.Status.Succeeded != 2 || j.Status.CompletedIndexes != "0,1" {
		t.Fatalf("status: %+v", j.Status)
	}
	if ev := events(fx); strings.Contains(ev, ReasonTooManySucceeded) {
		t.Errorf("events:\n%s", ev)
	}
}

// A Job that reaches its verdict while suspended is not marked Suspended, as in Kubernetes: its
// last pod succeeding as the Job is suspended completes it, without a Suspended condition or event.
func TestAJobFinishingWhileSuspendedIsNotMarkedSuspended(t *testing.T) {
	fx := newFixture(t, newJob(completions(1), parallel(1), suspend), newPod("w0", corev1.PodSucceeded))
	fx.sync(t, "ns/work")
	j := fx.job(t)
	if !hasCondition(j, batchv1.JobComplete, "") {
		t.Fatalf("not complete: %+v", j.Status.Conditions)
	}
	if condition(&j.Status, batchv1.JobSuspended) != nil || strings.Contains(events(fx), ReasonSuspended) {
		t.Errorf("a completed Job marked suspended: %+v\n%s", j.Status.Conditions, events(fx))
	}

	// Without a verdict, suspension is recorded as before.
	fx = newFixture(t, newJob(completions(2), parallel(1), suspend), newPod("w0", corev1.PodSucceeded))
	fx.sync(t, "ns/work")
	if !hasCondition(fx.job(t), batchv1.JobSuspended, "JobSuspended") || !strings.Contains(events(fx), "Normal Suspended Job suspended") {
		t.Errorf("suspension not recorded: %+v\n%s", fx.job(t).Status.Conditions, events(fx))
	}
}

// Scaling down deletes the least advanced pods first, in Kubernetes' ActivePods order: a Pending
// pod before a Running one, however old; then more restarts before fewer.
func TestScaleDownDeletesTheLeastAdvancedPodsFirst(t *testing.T) {
	created := func(d time.Duration) podOpt {
		return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now.Add(-d)) }
	}
	restarts := func(n int32) podOpt {
		return func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: n}}
		}
	}
	for name, tc := range map[string]struct {
		pods []runtime.Object
		want string
	}{
		"pending before running": {[]runtime.Object{
			newPod("old-pending", corev1.PodPending, created(2*time.Hour)), newPod("new-running", corev1.PodRunning, created(time.Hour)),
		}, "old-pending"},
		"more restarts first": {[]runtime.Object{
			newPod("old-crashy", corev1.PodRunning, created(2*time.Hour), restarts(3)), newPod("new-steady", corev1.PodRunning, created(time.Hour)),
		}, "old-crashy"},
	} {
		t.Run(name, func(t *testing.T) {
			fx := newFixture(t, append([]runtime.Object{newJob(completions(4), parallel(1))}, tc.pods...)...)
			fx.sync(t, "ns/work")
			if got := fx.deleted(); !slices.Equal(got, []string{tc.want}) {
				t.Errorf("deleted %v, want [%s]", got, tc.want)
			}
		})
	}
}

type afterQueue struct {
	runner.Queue
	after []time.Duration
}

func (q *afterQueue) AddAfter(_ string, d time.Duration) { q.after = append(q.after, d) }

// As Kubernetes' TTL-after-finished controller, a Job whose cached copy is
// past its TTL is looked up again before it is deleted: one whose TTL was
// since raised is kept (and looked at again when the new TTL runs out), and a
// Job of the same name made anew after the finished one is not touched.
func TestTTLDecidedOnTheFreshJob(t *testing.T) {
	expired := newJob(ttl(60), completedAgo(100*time.Second))

	fx := newFixture(t, expired)
	q := &afterQueue{Queue: fx.c.queue}
	fx.c.queue = q
	kept := expired.DeepCopy()
	kept.Spec.TTLSecondsAfterFinished = ptrTo(int32(3600))
	if _, err := fx.client.BatchV1().Jobs("ns").Update(context.Background(), kept, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fx.client.ClearActions()
	fx.sync(t, "ns/work")
	if dels := controllertest.Filter(fx.client.Actions(), "delete", "jobs"); len(dels) != 0 {
		t.Errorf("deleted a Job whose TTL was raised to an hour")
	}
	if want := []time.Duration{3500 * time.Second}; !slices.Equal(q.after, want) {
		t.Errorf("requeued after %v, want %v", q.after, want)
	}

	fx = newFixture(t, expired)
	if err := fx.client.BatchV1().Jobs("ns").Delete(context.Background(), "work", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := fx.client.BatchV1().Jobs("ns").Create(context.Background(), newJob(ttl(60), func(j *batchv1.Job) { j.UID = "uid-work-2" }), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fx.client.ClearActions()
	fx.sync(t, "ns/work")
	if dels := controllertest.Filter(fx.client.Actions(), "delete", "jobs"); len(dels) != 0 {
		t.Errorf("deleted the running Job that took the finished one's name")
	}
}

// A finished Job whose Complete condition has no lastTransitionTime has no
// finish time to count its TTL from: Kubernetes never deletes it (rather than
// taking the zero time and deleting it at once).
func TestTTLNeedsAFinishTime(t *testing.T) {
	other := "example.com/queue"
	for name, opt := range map[string]jobOpt{
		"managed here":      func(*batchv1.Job) {},
		"managed elsewhere": func(j *batchv1.Job) { j.Spec.ManagedBy = &other },
	} {
		fx := newFixture(t, newJob(ttl(60), opt, completedAgo(0), func(j *batchv1.Job) {
			j.Status.Conditions[0].LastTransitionTime = metav1.Time{}
		}))
		fx.sync(t, "ns/work")
		if dels := controllertest.Filter(fx.client.Actions(), "delete", "jobs"); len(dels) != 0 {
			t.Errorf("%s: deleted a Job without a finish time", name)
		}
	}
}

// Kubernetes' ttl_after_finished_controller_job_deletion_duration_seconds: how
// long after its TTL ran out each Job was deleted; a delete that found the Job
// gone, or another of its name, deleted nothing and is not counted.
func TestTTLDeletionDurationMetric(t *testing.T) {
	read := func() (uint64, float64) {
		var m dto.Metric
		if err := jobDeletionDuration.Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
	}
	count, sum := read()
	fx := newFixture(t, newJob(ttl(60), completedAgo(100*time.Second)))
	fx.sync(t, "ns/work")
	if c, s := read(); c != count+1 || s-sum != 40 {
		t.Errorf("deletion duration: %d samples summing %vs more, want 1 of 40s", c-count, s-sum)
	}
	count, sum = read()
	fx = newFixture(t, newJob(ttl(60), completedAgo(100*time.Second)))
	fx.client.PrependReactor("delete", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(batchv1.Resource("jobs"), "work", errors.New("uid differs"))
	})
	fx.sync(t, "ns/work")
	if c, _ := read(); c != count {
		t.Errorf("a delete that deleted nothing was counted")
	}
}

// While a replacement waits out its back-off, status.active still counts the pods that run, so
// status.ready never exceeds it. Kubernetes' controller has reported active=0 there and had the
// status write refused ("cannot set more ready pods than active", kubernetes#139428); skiff counts
// the pods it sees.
func TestBackoffKeepsReadyWithinActive(t *testing.T) {
	ready := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	fx := newFixture(t, newJob(completions(2), parallel(2)), newPod("w0", corev1.PodRunning, ready),
		newPod("w1", corev1.PodFailed, finishedAgo(time.Second)))
	fx.sync(t, "ns/work")
	if n := len(fx.created(t)); n != 0 {
		t.Fatalf("created %d pods during the back-off", n)
	}
	if st := fx.job(t).Status; st.Active != 1 || ptrValue(st.Ready) != int32(1) || st.Failed != 1 {
		t.Errorf("active %d, ready %v, failed %d; want 1, 1, 1", st.Active, ptrValue(st.Ready), st.Failed)
	}
}
