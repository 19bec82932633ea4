package job

import (
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/controllers/podstate"
)

// perIndex reports whether the Job limits failures per index (spec.backoffLimitPerIndex).
func perIndex(job *batchv1.Job) bool {
	return indexed(job) && job.Spec.BackoffLimitPerIndex != nil && job.Spec.Completions != nil
}

// indexFailures is what the pods of one index tell about its failures.
type indexFailures struct {
	count   int32     // failures so far (a pod carries the count before it in an annotation)
	ignored int32     // failures the pod failure policy ignored: not against the limit, but backed off
	newest  time.Time // when the latest failure happened, for the back-off
	failed  bool      // a FailIndex rule of the pod failure policy matched
}

// failuresByIndex counts each index's failures from its pods: a failed pod's annotations plus its
// own failure (pods of an index are created one after another, so the highest counts are the
// index's). As in Kubernetes, ignored failures have their own count
// (batch.kubernetes.io/job-index-ignored-failure-count) that the back-off adds in.
func failuresByIndex(job *batchv1.Job, pods []*corev1.Pod) map[int]*indexFailures {
	out := map[int]*indexFailures{}
	completions := *job.Spec.Completions
	for _, p := range pods {
		i, ok := completionIndex(p, completions)
		if !ok || !isFailed(job, p) {
			continue
		}
		f := out[i]
		if f == nil {
			f = &indexFailures{}
			out[i] = f
		}
		prior, _ := strconv.Atoi(p.Annotations[batchv1.JobIndexFailureCountAnnotation])
		priorIgnored, _ := strconv.Atoi(p.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation])
		if ignoredFailure(job, p) {
			f.count = max(f.count, int32(prior))
			f.ignored = max(f.ignored, int32(priorIgnored)+1)
		} else {
			f.count = max(f.count, int32(prior)+1)
			f.ignored = max(f.ignored, int32(priorIgnored))
		}
		if t := failureTime(p); t.After(f.newest) {
			f.newest = t
		}
		if m, ok := matchFailurePolicy(job, p); ok && m.action == batchv1.PodFailurePolicyActionFailIndex {
			f.failed = true
		}
	}
	return out
}

// failedIndexes adds to status.failedIndexes every index over its backoff limit (or failed by a
// FailIndex rule); an index once failed stays failed.
func failedIndexes(job *batchv1.Job, st *batchv1.JobStatus, failures map[int]*indexFailures) indexSet {
	var failed indexSet
	if st.FailedIndexes != nil {
		failed = parseIndexes(*st.FailedIndexes, *job.Spec.Completions)
	}
	done := parseIndexes(st.CompletedIndexes, *job.Spec.Completions)
	for i, f := range failures {
		if !done.Has(i) && (f.failed || f.count > *job.Spec.BackoffLimitPerIndex) {
			failed.Insert(i)
		}
	}
	return failed
}

// perIndexOutcome decides a per-index Job's failure: too many failed indexes, or every index done
// with some failed.
func perIndexOutcome(job *batchv1.Job, st *batchv1.JobStatus, failed indexSet) (reason, message string) {
	if m := job.Spec.MaxFailedIndexes; m != nil && int32(failed.Len()) > *m {
		return batchv1.JobReasonMaxFailedIndexesExceeded, "Job has exceeded the specified maximal number of failed indexes"
	}
	done := parseIndexes(st.CompletedIndexes, *job.Spec.Completions)
	if failed.Len() > 0 && int32(done.Union(failed).Len()) >= *job.Spec.Completions {
		return batchv1.JobReasonFailedIndexes, "Job has failed indexes"
	}
	return "", ""
}

// perIndexState is a per-index Job's view of its indexes during one sync.
type perIndexState struct {
	failures map[int]*indexFailures
	failed   indexSet
}

// awaitingReplacement returns, per index, the failed pod that keeps its tracking finalizer (and so
// stays, counted later) until a replacement for its index exists, as Kubernetes'
// getPodsWithDelayedDeletionPerIndex: the replacement takes the index's failure count from the
// failed pods in view, so were the last of them deleted first, the count would start again. An
// index that has succeeded, has failed or has an active pod needs none; of several failed pods of
// an index, the one with the highest count and then the latest to finish is kept. holds reports
// whether a pod still holds its finalizer.
func awaitingReplacement(job *batchv1.Job, st *batchv1.JobStatus, pods []*corev1.Pod, holds func(*corev1.Pod) bool) map[int]*corev1.Pod {
	completions := *job.Spec.Completions
	var busy []int // succeeded or active
	for _, p := range pods {
		if i, ok := completionIndex(p, completions); ok && (p.Status.Phase == corev1.PodSucceeded || podstate.IsActive(p)) {
			busy = append(busy, i)
		}
	}
	covered := parseIndexes(st.CompletedIndexes, completions).Union(failedIndexes(job, st, failuresByIndex(job, pods))).Union(indexesOf(busy...))
	out := map[int]*corev1.Pod{}
	for _, p := range pods {
		i, ok := completionIndex(p, completions)
		if !ok || covered.Has(i) || !holds(p) || !isFailed(job, p) {
			continue
		}
		if kept := out[i]; kept == nil || (failureCounts(kept) <= failureCounts(p) && !failureTime(p).Before(failureTime(kept))) {
			out[i] = p
		}
	}
	return out
}

// failureCounts is the count of earlier failures of its index a pod carries, ignored ones included.
func failureCounts(pod *corev1.Pod) int {
	n, _ := strconv.Atoi(pod.Annotations[batchv1.JobIndexFailureCountAnnotation])
	ignored, _ := strconv.Atoi(pod.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation])
	return max(n, 0) + max(ignored, 0)
}
