package job

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// maxUncountedPods bounds the pods one sync records in status.uncountedTerminatedPods (and so
// the finalizers it removes), as Kubernetes' MaxUncountedPods: the status stays small (about 20 KB
// of UIDs) and a Job with thousands of finished pods does not hold a worker for long. The rest
// are counted by the next syncs, which the status write and pod updates bring about.
const maxUncountedPods = 500

// trackTerminated records newly terminated pods in status.uncountedTerminatedPods, removes their
// tracking finalizers, and moves the pods whose finalizer is gone into the counters. Each step is
// persisted before the next, so a crash in between never loses or double-counts a pod.
// A finished Job counts no more pods: as in Kubernetes, the pods it still has (those left
// running, or terminating when it finished) only lose their finalizers.
// It reports the terminated pods it left for a later sync (see awaitingReplacement and
// maxUncountedPods).
func (c *Controller) trackTerminated(ctx context.Context, job *batchv1.Job, pods []*corev1.Pod) (_ *batchv1.Job, left leftOver, _ error) {
	st := job.Status.DeepCopy()
	if st.UncountedTerminatedPods == nil {
		st.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	u := st.UncountedTerminatedPods
	succ, fail := sets.New(u.Succeeded...), sets.New(u.Failed...)
	jobFinished := finished(job)
	stopping := jobFinished || (job.Spec.Suspend != nil && *job.Spec.Suspend)
	var completions int32
	if job.Spec.Completions != nil {
		completions = *job.Spec.Completions
	}
	completed := parseIndexes(st.CompletedIndexes, completions)
	// An index once failed stays failed (failedIndexes): a pod of it that
	// succeeds afterwards (it was terminating) does not complete it as well,
	// which the API server would refuse (completed and failed indexes must
	// not overlap) and leave the status unwritable.
	var failedBefore indexSet
	if st.FailedIndexes != nil {
		failedBefore = parseIndexes(*st.FailedIndexes, completions)
	}

	key := job.Namespace + "/" + job.Name
	// holds reports whether the pod still holds its tracking finalizer: not
	// when this controller removed it and the informer is behind.
	holds := func(p *corev1.Pod) bool { return hasTrackingFinalizer(p) && !c.released.pending(key, p.UID) }
	var waiting map[int]*corev1.Pod
	if perIndex(job) && !jobFinished && job.DeletionTimestamp == nil && !verdictRecorded(&job.Status) {
		waiting = awaitingReplacement(job, st, pods, holds)
	}
	if indexed(job) {
		pods = inIndexOrder(pods, completions)
	}
	var release []*corev1.Pod // pods whose finalizer can go now
	recorded := false
	newIndexes := 0 // indexes found succeeded
	for _, p := range pods {
		if !holds(p) {
			continue
		}
		if jobFinished {
			release = append(release, p)
			continue
		}
		if i, ok := completionIndex(p, completions); ok && waiting[i] == p {
			left.add(job, p, stopping)
			continue
		}
		if !succ.Has(p.UID) && !fail.Has(p.UID) && newIndexes+succ.Len()+fail.Len() >= maxUncountedPods {
			// Full: the pods recorded already are released and counted, the rest wait.
			left.add(job, p, stopping)
			continue
		}
		switch {
		case succ.Has(p.UID) || fail.Has(p.UID):
			release = append(release, p)
		case p.Status.Phase == corev1.PodSucceeded && indexed(job):
			// An Indexed Job counts succeeded indexes, not pods, as Kubernetes
			// does: the index is recorded (and persisted before the finalizer
			// goes), and a second pod of an index that succeeds adds nothing.
			if i, ok := completionIndex(p, completions); ok && !completed.Has(i) && !failedBefore.Has(i) {
				completed.Insert(i)
				newIndexes++
				recorded = true
			}
			release = append(release, p)
		case p.Status.Phase == corev1.PodSucceeded:
			succ.Insert(p.UID)
			recorded = true
			release = append(release, p)
		case p.Status.Phase == corev1.PodFailed && ignoredFailure(job, p):
			// The pod failure policy says this failure does not count.
			release = append(release, p)
		case p.Status.Phase == corev1.PodFailed:
			fail.Insert(p.UID)
			recorded = true
			release = append(release, p)
		case p.DeletionTimestamp != nil && stopping:
			// Deleted because the Job finished or was suspended: not a failure of the pod.
			release = append(release, p)
		case isFailed(job, p): // deleted before it finished, and the Job does not wait for Failed
			fail.Insert(p.UID)
			recorded = true
			release = append(release, p)
		}
	}
	if recorded {
		u.Succeeded, u.Failed = sortedUIDs(succ), sortedUIDs(fail)
		if indexed(job) {
			st.CompletedIndexes = formatIndexes(completed)
			st.Succeeded = int32(completed.Len())
		}
		updated, err := c.writeStatus(ctx, job, st)
		if err != nil || updated == nil {
			return job, left, err
		}
		job = updated
	}

	var errs []string
	stillHeld := sets.New[types.UID]()
	for _, p := range pods {
		if holds(p) {
			stillHeld.Insert(p.UID)
		}
	}
	for _, p := range release {
		if err := c.removeTrackingFinalizer(ctx, p); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		c.released.released(key, p.UID)
		stillHeld.Delete(p.UID)
	}

	// Count every recorded pod that no longer holds a finalizer (released now, or gone).
	st = job.Status.DeepCopy()
	if st.UncountedTerminatedPods == nil {
		st.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	u = st.UncountedTerminatedPods
	moved := false
	keepS, keepF := u.Succeeded[:0:0], u.Failed[:0:0]
	for _, uid := range u.Succeeded {
		if stillHeld.Has(uid) {
			keepS = append(keepS, uid)
			continue
		}
		// An Indexed Job's succeeded pods (recorded by an older skiff)
		// are already counted by their indexes.
		if !indexed(job) {
			st.Succeeded++
		}
		moved = true
	}
	for _, uid := range u.Failed {
		if stillHeld.Has(uid) {
			keepF = append(keepF, uid)
			continue
		}
		st.Failed++
		moved = true
	}
	if moved {
		u.Succeeded, u.Failed = keepS, keepF
		updated, err := c.writeStatus(ctx, job, st)
		if err != nil {
			return job, left, err
		}
		if updated != nil {
			job = updated
		}
	}
	if len(errs) > 0 {
		return job, left, fmt.Errorf("remove job tracking finalizers: %s", strings.Join(errs, "; "))
	}
	return job, left, nil
}

// inIndexOrder returns the pods sorted by completion index, those without a valid one first, as
// Kubernetes orders them before counting: when maxUncountedPods cuts a sync short, the indexes it
// records are the lowest, so status.completedIndexes grows as one range ("0-499") rather than
// as scattered ones in the cache's arbitrary order.
func inIndexOrder(pods []*corev1.Pod, completions int32) []*corev1.Pod {
	key := func(p *corev1.Pod) int {
		if i, ok := completionIndex(p, completions); ok {
			return i
		}
		return -1
	}
	sorted := slices.Clone(pods)
	slices.SortStableFunc(sorted, func(a, b *corev1.Pod) int { return key(a) - key(b) })
	return sorted
}

// leftOver are the terminated pods a sync leaves uncounted for a later one: until they are
// counted, the Job cannot finish. Those that will count are in succeeded and failed, so the
// sync still sees them, as Kubernetes does (it counts the Job's pods from the finalizers they hold).
type leftOver struct{ pods, succeeded, failed int32 }

func (l *leftOver) add(job *batchv1.Job, p *corev1.Pod, stopping bool) {
	switch {
	case p.Status.Phase == corev1.PodSucceeded:
		l.pods++
		if !indexed(job) { // an Indexed Job counts its indexes, from the pods
			l.succeeded++
		}
	case p.Status.Phase == corev1.PodFailed:
		l.pods++
		if !ignoredFailure(job, p) {
			l.failed++
		}
	case p.DeletionTimestamp != nil:
		l.pods++
		if !stopping && isFailed(job, p) {
			l.failed++
		}
	}
}

func ignoredFailure(job *batchv1.Job, pod *corev1.Pod) bool {
	m, ok := matchFailurePolicy(job, pod)
	return ok && m.action == batchv1.PodFailurePolicyActionIgnore
}

// writeStatus writes st and returns the updated Job; nil (no error) when the Job is gone.
func (c *Controller) writeStatus(ctx context.Context, job *batchv1.Job, st *batchv1.JobStatus) (*batchv1.Job, error) {
	next := job.DeepCopy()
	next.Status = *st
	updated, err := c.client.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("update status of job %s/%s: %w", job.Namespace, job.Name, err)
	}
	c.written.wrote(job.UID, st)
	return updated, nil
}

func sortedUIDs(s sets.Set[types.UID]) []types.UID {
	out := s.UnsortedList()
	slices.Sort(out)
	return out
}

// removeTrackingFinalizer drops the finalizer with a JSON patch guarded by tests, so a concurrent
// change to the pod's finalizers makes it fail rather than remove the wrong one.
func (c *Controller) removeTrackingFinalizer(ctx context.Context, pod *corev1.Pod) error {
	idx := slices.Index(pod.Finalizers, batchv1.JobTrackingFinalizer)
	if idx < 0 {
		return nil
	}
	path := fmt.Sprintf("/metadata/finalizers/%d", idx)
	body, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": string(pod.UID)},
		{"op": "test", "path": path, "value": batchv1.JobTrackingFinalizer},
		{"op": "remove", "path": path},
	})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.JSONPatchType, body, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
