package job

import (
	"slices"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// rememberedFailures bounds the failures kept per Job: the back-off reaches
// MaxBackoff after seven, so more change nothing.
const rememberedFailures = 8

// seenFailure is one failed pod of a Job: when it failed, and whether the pod
// failure policy ignores it.
type seenFailure struct {
	uid     types.UID
	at      time.Time
	ignored bool
}

// jobFinishes are the finished pods of one Job (uid) the controller has
// seen: the latest success and the latest failures after it.
type jobFinishes struct {
	uid         types.UID
	lastSuccess time.Time
	failures    []seenFailure // newest last, at most rememberedFailures
}

// failureLog remembers, per Job, the pod failures and the latest success the
// controller has seen, as Kubernetes' back-off record does: a failed pod goes
// within seconds once its tracking finalizer is removed (one deleted by hand
// or evicted, at once), and the back-off before its replacement must outlive
// it. Like Kubernetes' record it lives in memory, so a restarted controller
// knows only the pods still there; and, like it, it is kept by the Job's key,
// so the sync that finds the Job gone forgets it (a Delete event handled
// while a sync was under way came before that sync's notes).
type failureLog struct {
	mu   sync.Mutex
	jobs map[string]*jobFinishes // by Job key
}

func newFailureLog() *failureLog {
	return &failureLog{jobs: map[string]*jobFinishes{}}
}

// observe adds the finished pods in view of the Job (at key) to what is
// remembered of it and returns the result: the latest success, and the
// failures since it, newest last (those before it no longer slow anything
// down). A pod first seen being deleted without its tracking finalizer is
// none: the controller released it before deleting it (too many pods, the
// Job suspended), as Kubernetes' record takes only tracked pods.
func (l *failureLog) observe(key string, job *batchv1.Job, pods []*corev1.Pod) (time.Time, []seenFailure) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.jobs[key]
	if r == nil || r.uid != job.UID {
		r = &jobFinishes{uid: job.UID}
		l.jobs[key] = r
	}
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded {
			if t := failureTime(p); t.After(r.lastSuccess) {
				r.lastSuccess = t
			}
		}
	}
	known := make(map[types.UID]int, len(r.failures))
	for i, f := range r.failures {
		known[f.uid] = i
	}
	for _, p := range pods {
		if !isFailed(job, p) {
			continue
		}
		f := seenFailure{uid: p.UID, at: failureTime(p), ignored: ignoredFailure(job, p)}
		if i, ok := known[p.UID]; ok {
			r.failures[i] = f // its failure time can move on (deleted, then finished)
			continue
		}
		if p.DeletionTimestamp != nil && !hasTrackingFinalizer(p) {
			continue // released, then deleted
		}
		known[p.UID] = len(r.failures)
		r.failures = append(r.failures, f)
	}
	r.failures = slices.DeleteFunc(r.failures, func(f seenFailure) bool { return !f.at.After(r.lastSuccess) })
	slices.SortStableFunc(r.failures, func(a, b seenFailure) int { return a.at.Compare(b.at) })
	if n := len(r.failures); n > rememberedFailures {
		r.failures = slices.Delete(r.failures, 0, n-rememberedFailures)
	}
	return r.lastSuccess, slices.Clone(r.failures)
}

// forget drops the Job at key, gone or finished.
func (l *failureLog) forget(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.jobs, key)
}

// len is how many Jobs are remembered.
func (l *failureLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.jobs)
}
