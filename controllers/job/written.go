package job

import (
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"
)

// writtenCounts are a Job's terminated pods as a status this controller
// wrote counts them: the counters plus the pods recorded in
// uncountedTerminatedPods, which are counted but not yet added.
type writtenCounts struct{ succeeded, failed int32 }

func countsOf(st *batchv1.JobStatus) writtenCounts {
	c := writtenCounts{st.Succeeded, st.Failed}
	if u := st.UncountedTerminatedPods; u != nil {
		c.succeeded += int32(len(u.Succeeded))
		c.failed += int32(len(u.Failed))
	}
	return c
}

// writtenStatuses remembers, per Job, the highest counts of the statuses this
// controller has written. The informer's copy of a Job can predate the last
// of those writes while the pods it counted already show the result of the
// next step (their tracking finalizer removed), so they no longer count
// themselves: with the older copy alone a sync would find a pod missing and
// start another. A Job's counts never go down, so what was written is a
// floor under them. Pods that never carried the finalizer (made by hand with
// the Job as owner) stay uncounted, as in Kubernetes; adopted ones get it.
type writtenStatuses struct {
	mu   sync.Mutex
	jobs map[types.UID]writtenCounts
}

func newWrittenStatuses() *writtenStatuses {
	return &writtenStatuses{jobs: map[types.UID]writtenCounts{}}
}

// wrote records a status written for the Job with this UID.
func (w *writtenStatuses) wrote(uid types.UID, st *batchv1.JobStatus) {
	c := countsOf(st)
	w.mu.Lock()
	defer w.mu.Unlock()
	old := w.jobs[uid]
	w.jobs[uid] = writtenCounts{max(old.succeeded, c.succeeded), max(old.failed, c.failed)}
}

// floor returns the highest counts written for the Job (zero if none).
func (w *writtenStatuses) floor(uid types.UID) writtenCounts {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.jobs[uid]
}

// forget drops a deleted Job.
func (w *writtenStatuses) forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.jobs, uid)
}
