package job

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// releasedPods remembers, per Job key, the pods whose tracking finalizer
// this controller has removed until the pod informer shows the removal (or
// the pod gone), as Kubernetes' job controller keeps its finalizer
// expectations. Once a pod's finalizer is gone its failure or success is
// moved into the Job's counters; a sync that still sees the pod's older
// copy, finalizer and all, must not take it for a newly terminated pod and
// count it again (seen under load: a Job with backoffLimit 2 reporting 4
// failures).
type releasedPods struct {
	mu   sync.Mutex
	jobs map[string]sets.Set[types.UID]
}

func newReleasedPods() *releasedPods {
	return &releasedPods{jobs: map[string]sets.Set[types.UID]{}}
}

// released records that the finalizer of the pod with this UID is gone.
func (r *releasedPods) released(job string, uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.jobs[job]
	if s == nil {
		s = sets.New[types.UID]()
		r.jobs[job] = s
	}
	s.Insert(uid)
}

// pending reports whether the pod's finalizer was removed but the informer
// has not shown it yet.
func (r *releasedPods) pending(job string, uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.jobs[job].Has(uid)
}

// observed forgets a pod the informer shows without the finalizer, or gone.
func (r *releasedPods) observed(job string, uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.jobs[job]; s != nil {
		s.Delete(uid)
		if s.Len() == 0 {
			delete(r.jobs, job)
		}
	}
}

// forget drops a deleted Job.
func (r *releasedPods) forget(job string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.jobs, job)
}
