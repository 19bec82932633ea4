package job

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/skiffkube/skiff/controllers/controllerref"
	"github.com/skiffkube/skiff/controllers/podstate"
)

// Event reasons and condition reasons, as Kubernetes'.
const (
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	ReasonDeadlineExceeded     = "DeadlineExceeded"
	ReasonCompleted            = "Completed"
	ReasonTooManySucceeded     = "TooManySucceededPods"
	ReasonSuspended            = "Suspended"
	ReasonResumed              = "Resumed"
	ReasonSuccessfulCreate     = "SuccessfulCreate"
	ReasonSuccessfulDelete     = "SuccessfulDelete"
	ReasonFailedCreate         = "FailedCreate"
	ReasonFailedDelete         = "FailedDelete"
)

func (c *Controller) syncJob(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.jobLister.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.exp.Forget(key)
		c.failures.forget(key) // noted by a sync its Delete event overtook
		return nil
	}
	if err != nil {
		return err
	}
	job := cached.DeepCopy()
	if managedElsewhere(job) {
		// spec.managedBy names another controller (MultiKueue, say): as Kubernetes, create no pods
		// and write no status; only ttlSecondsAfterFinished, the TTL controller's part, still applies.
		if finished(job) {
			return c.expireAfterTTL(ctx, key, job)
		}
		return nil
	}
	selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil || selector.Empty() {
		c.recorder.Eventf(job, corev1.EventTypeWarning, "InvalidSelector", "invalid selector: %v", err)
		return nil
	}
	if finished(job) {
		return c.afterFinished(ctx, key, job)
	}
	satisfied := c.exp.Satisfied(key)
	pods, err := c.claimPods(ctx, job, selector)
	if err != nil {
		return err
	}
	// Every sync notes the failures in view, also one that creates no pod: the failed pods lose
	// their finalizer below and may be gone by the next.
	c.failures.observe(key, job, pods)

	// 1. Count terminated pods without losing any (see the package doc).
	job, left, err := c.trackTerminated(ctx, job, pods)
	if err != nil {
		return err
	}

	now := c.now()
	st := job.Status.DeepCopy()
	active := activePods(pods)
	// The informer's copy of the Job can predate a status this controller
	// wrote (see writtenStatuses); what it wrote is a floor under the counts.
	// An Indexed Job takes its done indexes from the pods, in planIndexed.
	counted, wrote := countsOf(st), c.written.floor(job.UID)
	succeeded, failed := max(counted.succeeded, wrote.succeeded)+left.succeeded, max(counted.failed, wrote.failed)+left.failed
	if indexed(job) && job.Spec.Completions != nil {
		// Completions lowered (an elastic Indexed Job): as Kubernetes, the indexes past them no
		// longer count, in status.completedIndexes or status.succeeded.
		done := parseIndexes(st.CompletedIndexes, *job.Spec.Completions)
		st.CompletedIndexes, st.Succeeded = formatIndexes(done), int32(done.Len())
		succeeded = st.Succeeded
	}
	suspended := job.Spec.Suspend != nil && *job.Spec.Suspend

	// 2. First start (suspension and resumption are recorded below, once no verdict is reached).
	if !suspended && st.StartTime == nil {
		t := metav1.NewTime(now)
		st.StartTime = &t
	}

	// 3. Has the Job failed or completed? As in Kubernetes (since v1.31), the verdict is first recorded
	// as FailureTarget or SuccessCriteriaMet and stands from then on; the pods still running are
	// deleted, and the terminal Failed or Complete condition follows once none is left running or
	// terminating.
	// A success once recorded (SuccessCriteriaMet) stands as well: the pods deleted after it, failing
	// as they go or outliving the active deadline, no longer decide anything (as in Kubernetes).
	var failReason, failMessage string
	succeededAlready := false
	if cond := condition(st, batchv1.JobSuccessCriteriaMet); cond != nil && cond.Status == corev1.ConditionTrue {
		succeededAlready = true
	} else if cond := condition(st, batchv1.JobFailureTarget); cond != nil && cond.Status == corev1.ConditionTrue {
		failReason, failMessage = cond.Reason, cond.Message
	}
	var pi *perIndexState
	if perIndex(job) {
		pi = &perIndexState{failures: failuresByIndex(job, pods)}
		pi.failed = failedIndexes(job, st, pi.failures)
		st.FailedIndexes = ptrTo(formatIndexes(pi.failed))
		if failReason == "" && !succeededAlready {
			failReason, failMessage = perIndexOutcome(job, st, pi.failed)
		}
	}
	for _, p := range pods {
		if failReason != "" || succeededAlready {
			break
		}
		if m, ok := matchFailurePolicy(job, p); ok && m.action == batchv1.PodFailurePolicyActionFailJob {
			failReason, failMessage = batchv1.JobReasonPodFailurePolicy, m.message
			break
		}
	}
	switch {
	case failReason != "" || succeededAlready:
	case failed > backoffLimit(job) || pastBackoffLimitOnFailure(job, pods):
		failReason, failMessage = ReasonBackoffLimitExceeded, "Job has reached the specified backoff limit"
	case !suspended && job.Spec.ActiveDeadlineSeconds != nil && st.StartTime != nil &&
		!now.Before(st.StartTime.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second)):
		failReason, failMessage = ReasonDeadlineExceeded, "Job was active longer than specified deadline"
	}
	completeReason, completeMessage := batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods"
	complete := false
	if failReason == "" {
		if cond := condition(st, batchv1.JobSuccessCriteriaMet); cond != nil && cond.Status == corev1.ConditionTrue {
			complete, completeReason, completeMessage = true, cond.Reason, cond.Message
		} else if isComplete(job, st, succeeded, len(active)) {
			complete = true
		} else if i, ok := successPolicyMet(job, st); ok {
			complete = true
			completeReason, completeMessage = batchv1.JobReasonSuccessPolicy, fmt.Sprintf("Matched rules at index %d", i)
		}
	}

	// As Kubernetes, a Job that completes or fails is not marked Suspended, nor is one whose pods
	// this sync cannot act on yet (expectations pending, Job being deleted).
	if suspended && failReason == "" && !complete && satisfied && job.DeletionTimestamp == nil {
		if setCondition(st, batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended", now) {
			c.recorder.Event(job, corev1.EventTypeNormal, ReasonSuspended, "Job suspended")
		}
	}

	ready := int32(0)
	for _, p := range pods {
		if podstate.IsActive(p) && podstate.IsReady(p) {
			ready++
		}
	}
	terminating := int32(len(terminatingPods(pods)))
	// settled: no pod of the Job runs or terminates any more, nor waits to be counted, so a
	// verdict can become final.
	settled := len(active) == 0 && terminating == 0 && satisfied && left.pods == 0

	var manageErr error
	var changes podChanges
	switch {
	case failReason != "":
		// The pods keep their tracking finalizer: killed, they count as failed.
		changes, manageErr = c.deletePods(ctx, key, job, active, false)
		setCondition(st, batchv1.JobFailureTarget, corev1.ConditionTrue, failReason, failMessage, now)
		if settled && setCondition(st, batchv1.JobFailed, corev1.ConditionTrue, failReason, failMessage, now) {
			c.recorder.Event(job, corev1.EventTypeWarning, failReason, failMessage)
		}
	case complete:
		// Pods still running once the Job has succeeded (a success policy met early) are not failures.
		changes, manageErr = c.deletePods(ctx, key, job, active, true)
		setCondition(st, batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, completeReason, completeMessage, now)
		if settled && setCondition(st, batchv1.JobComplete, corev1.ConditionTrue, completeReason, completeMessage, now) {
			t := metav1.NewTime(now)
			st.CompletionTime = &t
			if job.Spec.Completions != nil && succeeded > *job.Spec.Completions {
				// Pods that raced past the count (a restarted controller, pods made by hand).
				c.recorder.Event(job, corev1.EventTypeWarning, ReasonTooManySucceeded, "Too many succeeded pods running after completion count reached")
			}
			c.recorder.Event(job, corev1.EventTypeNormal, ReasonCompleted, "Job completed")
		}
	case suspended:
		if satisfied {
			changes, manageErr = c.deletePods(ctx, key, job, active, true)
		}
	case satisfied && job.DeletionTimestamp == nil:
		// Resumed: the active deadline counts from now on. As in Kubernetes, this comes after the
		// verdict, which takes the deadline from the start before the suspension: a Job resumed
		// past it fails.
		if cond := condition(st, batchv1.JobSuspended); cond != nil && cond.Status == corev1.ConditionTrue {
			setCondition(st, batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", now)
			c.recorder.Event(job, corev1.EventTypeNormal, ReasonResumed, "Job resumed")
			t := metav1.NewTime(now)
			st.StartTime = &t
		}
		var wait time.Duration
		wait, changes, manageErr = c.managePods(ctx, key, job, st, active, pods, succeeded, failed, pi)
		if wait > 0 {
			c.queue.AddAfter(key, wait)
		}
	}

	// 4. Status.
	// The pods this sync deleted terminate now, and those it created are active, as Kubernetes
	// reports them, rather than only once the informer shows them.
	terminating += changes.deleted
	st.Active = int32(len(active)) - changes.deleted + changes.created
	st.Ready = ptrTo(ready - changes.deletedReady)
	st.Terminating = &terminating
	if failReason != "" || complete {
		st.Active, st.Ready = 0, ptrTo(int32(0))
	}
	if st.UncountedTerminatedPods == nil {
		// As Kubernetes, which gives every Job it syncs an empty one.
		st.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	if err := c.updateStatus(ctx, job, st); err != nil {
		return err
	}
	if manageErr != nil {
		return manageErr
	}
	// Wake up at the active deadline.
	if failReason == "" && !complete && !suspended && job.Spec.ActiveDeadlineSeconds != nil && st.StartTime != nil {
		c.queue.AddAfter(key, time.Until(st.StartTime.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second))+100*time.Millisecond)
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }

func backoffLimit(job *batchv1.Job) int32 {
	if job.Spec.BackoffLimit == nil {
		return 6
	}
	return *job.Spec.BackoffLimit
}

func parallelism(job *batchv1.Job) int32 {
	if job.Spec.Parallelism == nil {
		return 1
	}
	return *job.Spec.Parallelism
}

func indexed(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
}

func isComplete(job *batchv1.Job, st *batchv1.JobStatus, succeeded int32, active int) bool {
	switch {
	case job.Spec.Completions == nil:
		// A work queue: done once some pod succeeded and the others have finished.
		return succeeded > 0 && active == 0
	case indexed(job):
		return int32(parseIndexes(st.CompletedIndexes, *job.Spec.Completions).Len()) >= *job.Spec.Completions
	}
	return succeeded >= *job.Spec.Completions
}

// successPolicyMet evaluates spec.successPolicy of an Indexed Job: the index of the first rule whose
// succeededIndexes (all of them, or succeededCount of them) or succeededCount of any indexes have
// completed.
func successPolicyMet(job *batchv1.Job, st *batchv1.JobStatus) (int, bool) {
	if job.Spec.SuccessPolicy == nil || !indexed(job) || job.Spec.Completions == nil {
		return 0, false
	}
	done := parseIndexes(st.CompletedIndexes, *job.Spec.Completions)
	for i, rule := range job.Spec.SuccessPolicy.Rules {
		var have, want int
		switch {
		case rule.SucceededIndexes != nil:
			set := parseIndexes(*rule.SucceededIndexes, *job.Spec.Completions)
			have, want = done.Intersection(set).Len(), set.Len()
		default:
			have = done.Len()
		}
		if rule.SucceededCount != nil {
			want = int(*rule.SucceededCount)
		}
		if want > 0 && have >= want {
			return i, true
		}
	}
	return 0, false
}

// verdictRecorded: the FailureTarget or SuccessCriteriaMet condition is true, the Job's outcome
// decided (its terminal condition follows once its pods are done).
func verdictRecorded(st *batchv1.JobStatus) bool {
	for _, t := range []batchv1.JobConditionType{batchv1.JobFailureTarget, batchv1.JobSuccessCriteriaMet} {
		if c := condition(st, t); c != nil && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// finished: a Complete or Failed condition is true.
func finished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func finishedAt(job *batchv1.Job) time.Time {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// afterFinished handles a Job that has finished: as in Kubernetes, it adopts no pod and
// deletes none (a pod started by hand that matches its selector is not its business, and
// one it still owns runs to its end); the pods it owns only lose their tracking finalizers
// (trackTerminated), and the Job goes once its ttlSecondsAfterFinished have passed.
func (c *Controller) afterFinished(ctx context.Context, key string, job *batchv1.Job) error {
	c.failures.forget(key) // it replaces no pod any more
	all, err := c.podLister.Pods(job.Namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	var owned []*corev1.Pod
	for _, p := range all {
		if metav1.IsControlledBy(p, job) {
			owned = append(owned, p)
		}
	}
	if job, _, err = c.trackTerminated(ctx, job, owned); err != nil {
		return err
	}
	return c.expireAfterTTL(ctx, key, job)
}

// managedElsewhere: spec.managedBy hands the Job to another controller.
func managedElsewhere(job *batchv1.Job) bool {
	return job.Spec.ManagedBy != nil && *job.Spec.ManagedBy != batchv1.JobControllerName
}

// expireAfterTTL deletes a finished Job once its ttlSecondsAfterFinished have passed, or wakes up then.
func (c *Controller) expireAfterTTL(ctx context.Context, key string, job *batchv1.Job) error {
	if _, ok := c.ttlExpired(key, job); !ok {
		return nil
	}
	// The cached Job says its time is up, but the cache may not have seen an edit of the TTL yet
	// (a Job kept longer with kubectl patch): as Kubernetes' TTL controller, decide again on the
	// Job the API server holds, and delete that one only.
	fresh, err := c.client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get job %s before its TTL deletion: %w", key, err)
	}
	if !finished(fresh) {
		return nil
	}
	expired, ok := c.ttlExpired(key, fresh)
	if !ok {
		return nil
	}
	// Foreground, as Kubernetes' TTL controller: the pods go first, then the Job.
	policy := metav1.DeletePropagationForeground
	uid := fresh.UID
	err = c.client.BatchV1().Jobs(fresh.Namespace).Delete(ctx, fresh.Name, metav1.DeleteOptions{
		PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone already, or another Job of that name: nothing was deleted
	}
	if err != nil {
		return fmt.Errorf("delete expired job %s: %w", key, err)
	}
	observeTTLDeletion(expired, c.now())
	c.log.Info("deleted finished job after its TTL", "job", key)
	return nil
}

// ttlExpired reports whether a finished Job's ttlSecondsAfterFinished have passed, and when they
// did; if they are still to pass, it queues the Job for then.
func (c *Controller) ttlExpired(key string, job *batchv1.Job) (time.Time, bool) {
	if job.Spec.TTLSecondsAfterFinished == nil || job.DeletionTimestamp != nil {
		return time.Time{}, false
	}
	at := finishedAt(job)
	if at.IsZero() {
		// A condition without its lastTransitionTime (written by another controller through
		// spec.managedBy, say): as Kubernetes, no finish time, no expiry. An edit of the Job
		// wakes it again.
		c.log.Warn("finished job has no finish time: not deleted after its TTL", "job", key)
		return time.Time{}, false
	}
	expire := at.Add(time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second)
	if left := expire.Sub(c.now()); left > 0 {
		c.queue.AddAfter(key, left)
		return time.Time{}, false
	}
	return expire, true
}

func activePods(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if podstate.IsActive(p) {
			out = append(out, p)
		}
	}
	return out
}

// claimPods lists the pods the Job selects (terminated ones included) and adopts or releases them.
func (c *Controller) claimPods(ctx context.Context, job *batchv1.Job, selector labels.Selector) ([]*corev1.Pod, error) {
	all, err := c.podLister.Pods(job.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	objs := make([]metav1.Object, len(all))
	for i, p := range all {
		objs[i] = p
	}
	cl := controllerref.Claimer{
		Owner: job, OwnerGVK: controllerKind, Selector: selector,
		Patch: func(ctx context.Context, ns, name string, patch []byte) error {
			_, err := c.client.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		},
		CanAdopt: controllerref.RecheckOwner(job, func(ctx context.Context) (metav1.Object, error) {
			return c.client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		}),
		// As in Kubernetes, an adopted pod gets the tracking finalizer, so it is counted too.
		Finalizers: []string{batchv1.JobTrackingFinalizer},
	}
	claimed, err := cl.Claim(ctx, objs)
	out := make([]*corev1.Pod, len(claimed))
	for i, o := range claimed {
		p := o.(*corev1.Pod)
		if !hasTrackingFinalizer(p) && !slices.ContainsFunc(p.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == job.UID }) {
			// Adopted in this sync: the cache does not show the finalizer the adoption added yet.
			p = p.DeepCopy()
			p.Finalizers = append(p.Finalizers, batchv1.JobTrackingFinalizer)
		}
		out[i] = p
	}
	return out, err
}

func (c *Controller) updateStatus(ctx context.Context, job *batchv1.Job, st *batchv1.JobStatus) error {
	if statusEqual(&job.Status, st) {
		return nil
	}
	_, err := c.writeStatus(ctx, job, st)
	return err
}

func statusEqual(a, b *batchv1.JobStatus) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func condition(st *batchv1.JobStatus, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// setCondition sets a condition, reporting whether it changed. As Kubernetes'
// ensureJobConditionStatus, a new status, reason or message makes a new condition, both of its
// times included; an absent condition is not added as False (absent already reads as not true).
func setCondition(st *batchv1.JobStatus, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) bool {
	ts := metav1.NewTime(now)
	next := batchv1.JobCondition{Type: t, Status: status, Reason: reason, Message: message, LastProbeTime: ts, LastTransitionTime: ts}
	if cur := condition(st, t); cur != nil {
		if cur.Status == status && cur.Reason == reason && cur.Message == message {
			return false
		}
		*cur = next
		return true
	}
	if status == corev1.ConditionFalse {
		return false
	}
	st.Conditions = append(st.Conditions, next)
	return true
}

// completionIndex reads a pod's completion index; ok is false when it has none or it is out of range.
func completionIndex(pod *corev1.Pod, completions int32) (int, bool) {
	s, found := pod.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !found {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || i >= int(completions) { // as read: 4294967296 is not 0
		return 0, false
	}
	return i, true
}

// failureTime is when a pod finished, for back-off, found as Kubernetes does: the latest container
// termination if every container has terminated, else when its Ready condition turned false, else
// when it was deleted (less the grace period), else when it was created.
func failureTime(pod *corev1.Pod) time.Time {
	var t time.Time
	for _, s := range pod.Status.ContainerStatuses {
		if s.State.Terminated == nil || s.State.Terminated.FinishedAt.IsZero() {
			t = time.Time{}
			break
		}
		if s.State.Terminated.FinishedAt.After(t) {
			t = s.State.Terminated.FinishedAt.Time
		}
	}
	if !t.IsZero() {
		return t
	}
	if c := podstate.ReadyCondition(pod); c != nil && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
		return c.LastTransitionTime.Time
	}
	if pod.DeletionTimestamp != nil {
		grace := time.Duration(0)
		if pod.DeletionGracePeriodSeconds != nil {
			grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		}
		return pod.DeletionTimestamp.Add(-grace)
	}
	return pod.CreationTimestamp.Time
}

// backoffDelay is the pause after the n-th failure before a replacement pod is created.
func backoffDelay(base time.Duration, n int32) time.Duration {
	if n <= 0 {
		return 0
	}
	d := base
	for i := int32(1); i < n && d < MaxBackoff; i++ {
		d *= 2
	}
	return min(d, MaxBackoff)
}

// isFailed reports whether the pod counts as a failure: Failed, or, unless the Job replaces only
// failed pods, being deleted before it succeeded (an orphan may never reach a phase).
func isFailed(job *batchv1.Job, pod *corev1.Pod) bool {
	if pod.Status.Phase == corev1.PodFailed {
		return true
	}
	return !onlyReplaceFailed(job) && pod.DeletionTimestamp != nil && pod.Status.Phase != corev1.PodSucceeded
}

// onlyReplaceFailed is Kubernetes' rule for podReplacementPolicy: Failed (the default with a pod
// failure policy): a terminating pod is neither a failure nor replaced until it is Failed, so the
// failure policy judges the pod's final conditions (a DisruptionTarget from an eviction, say).
func onlyReplaceFailed(job *batchv1.Job) bool {
	return job.Spec.PodFailurePolicy != nil ||
		(job.Spec.PodReplacementPolicy != nil && *job.Spec.PodReplacementPolicy == batchv1.Failed)
}

// terminatingPods are those being deleted that have not finished.
func terminatingPods(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil && !podstate.IsTerminal(p) {
			out = append(out, p)
		}
	}
	return out
}

// backoffFailures returns how many failures the back-off before a replacement counts, and when the
// latest of them happened, from the Job's finished pods as the controller has seen them (failureLog:
// a failed pod can be gone already). As in Kubernetes, a success resets the count: after a success,
// only the failures since count; without one, every failure the Job has counted (failed). Failures
// the pod failure policy ignores are not counted against the backoff limit but, as in Kubernetes
// (since v1.28), do slow down the replacements: a Job whose every failure is ignored must not
// recreate pods in a tight loop.
func backoffFailures(lastSuccess time.Time, failures []seenFailure, failed int32) (int32, time.Time) {
	var lastFailure time.Time
	var ignored int32
	for _, f := range failures {
		if f.at.After(lastFailure) {
			lastFailure = f.at
		}
		if f.ignored {
			ignored++ // not in failed
		}
	}
	if lastSuccess.IsZero() {
		return failed + ignored, lastFailure
	}
	return int32(len(failures)), lastFailure
}

// pastBackoffLimitOnFailure: with restartPolicy OnFailure a failing container is restarted in place
// rather than its pod failing, so Kubernetes counts the restarts of the Job's pending and running
// pods against the backoff limit (any restart at all with a limit of 0).
func pastBackoffLimitOnFailure(job *batchv1.Job, pods []*corev1.Pod) bool {
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
			continue
		}
		for _, s := range p.Status.InitContainerStatuses {
			restarts += s.RestartCount
		}
		for _, s := range p.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
	}
	if limit := backoffLimit(job); limit > 0 {
		return restarts >= limit
	}
	return restarts > 0
}
