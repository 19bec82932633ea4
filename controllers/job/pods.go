package job

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/skiffkube/skiff/controllers/controllerref"
	"github.com/skiffkube/skiff/controllers/podstate"
	"github.com/skiffkube/skiff/controllers/slowstart"
)

// maxPodChangesPerSync bounds one sync's creates, and its deletes, as Kubernetes'
// MaxPodCreateDeletePerSync.
const maxPodChangesPerSync = 500

// podChanges are the pods one sync created and deleted, which status.active, ready and terminating
// reflect at once, as in Kubernetes, rather than only once the informer shows them.
type podChanges struct{ created, deleted, deletedReady int32 }

// managePods creates or deletes pods so that the right number run. It returns how long to wait
// before creating more when a back-off is in force.
func (c *Controller) managePods(ctx context.Context, key string, job *batchv1.Job, st *batchv1.JobStatus,
	active, all []*corev1.Pod, succeeded, failed int32, pi *perIndexState) (time.Duration, podChanges, error) {
	var excess []*corev1.Pod
	var toCreate []*int // nil entries: non-indexed pods
	if indexed(job) {
		excess, toCreate = planIndexed(job, st, active, all, pi)
	} else {
		want := parallelism(job)
		switch {
		case job.Spec.Completions != nil:
			want = min(want, max(*job.Spec.Completions-succeeded, 0))
		case succeeded > 0:
			want = int32(len(active)) // a work queue that has a success: let the rest finish
		}
		if d := len(active) - int(want); d > 0 {
			excess = pickExcess(active, d)
		}
		running := len(active)
		if onlyReplaceFailed(job) {
			running += len(terminatingPods(all)) // replaced once Failed, not before
		}
		for i := running; i < int(want); i++ {
			toCreate = append(toCreate, nil)
		}
	}
	if len(excess) > 0 {
		// As Kubernetes, a sync that deletes pods creates none: an Indexed Job can need both (a
		// duplicate of one index, another index missing), and the creates wait for the next sync,
		// once the deletes are observed.
		if len(excess) > maxPodChangesPerSync {
			excess = excess[:maxPodChangesPerSync]
		}
		changes, err := c.deletePods(ctx, key, job, excess, true)
		return 0, changes, err
	}
	var changes podChanges
	if len(toCreate) == 0 {
		return 0, changes, nil
	}
	var wait time.Duration
	switch {
	case pi != nil:
		// Each index backs off on its own failures.
		var ready []*int
		for _, i := range toCreate {
			f := pi.failures[*i]
			if f == nil {
				ready = append(ready, i)
				continue
			}
			if next := f.newest.Add(backoffDelay(c.backoff, f.count+f.ignored)); c.now().Before(next) {
				if d := next.Sub(c.now()); wait == 0 || d < wait {
					wait = d
				}
				continue
			}
			ready = append(ready, i)
		}
		toCreate = ready
	default:
		lastSuccess, failures := c.failures.observe(key, job, all)
		if n, last := backoffFailures(lastSuccess, failures, failed); n > 0 {
			if next := last.Add(backoffDelay(c.backoff, n)); c.now().Before(next) {
				return next.Sub(c.now()), changes, nil
			}
		}
	}
	if len(toCreate) > maxPodChangesPerSync {
		toCreate = toCreate[:maxPodChangesPerSync]
	}
	c.exp.ExpectCreations(key, len(toCreate))
	// Slow start, as Kubernetes: a quota or admission refusal costs one failed call (and one
	// FailedCreate event), not hundreds.
	made, created, err := slowstart.Run(len(toCreate), func(i int) error {
		idx := toCreate[i]
		var prior indexFailures
		if pi != nil && idx != nil && pi.failures[*idx] != nil {
			prior = *pi.failures[*idx]
		}
		err := c.createPod(ctx, job, idx, prior)
		if err != nil {
			c.exp.CreationObserved(key) // never to be observed
		}
		return err
	})
	changes.created += int32(created)
	if err != nil {
		for range len(toCreate) - made {
			c.exp.CreationObserved(key) // skipped: tried again on a later sync
		}
		return wait, changes, err
	}
	return wait, changes, nil
}

// planIndexed returns the active pods to delete (no valid index, a duplicate of another active pod,
// or an index already completed or failed) and the indexes to start, lowest first, within parallelism.
// all is every pod of the Job, terminated ones included.
func planIndexed(job *batchv1.Job, st *batchv1.JobStatus, active, all []*corev1.Pod, pi *perIndexState) (excess []*corev1.Pod, start []*int) {
	completions := *job.Spec.Completions
	done := parseIndexes(st.CompletedIndexes, completions)
	// An index whose pod succeeded is done even if the status does not say so yet: the informer's
	// copy of the Job can predate the status write that recorded it, while the pod, its tracking
	// finalizer already removed, no longer adds it in trackTerminated. Starting it again would run
	// the index twice (Kubernetes also takes succeeded indexes from the pods).
	var succeeded []int
	for _, p := range all {
		if i, ok := completionIndex(p, completions); ok && p.Status.Phase == corev1.PodSucceeded {
			succeeded = append(succeeded, i)
		}
	}
	done = done.Union(indexesOf(succeeded...))
	if pi != nil {
		done = done.Union(pi.failed) // a failed index is finished too: no pods for it
	}
	running := map[int]bool{}
	kept := 0
	// Of several pods of one index keep the most advanced, as Kubernetes does (the last in
	// ActivePods order): a running replacement is kept over a pending duplicate.
	sorted := append([]*corev1.Pod(nil), active...)
	sort.SliceStable(sorted, func(i, j int) bool { return lessActive(sorted[j], sorted[i]) })
	var keptPods []*corev1.Pod
	for _, p := range sorted {
		i, ok := completionIndex(p, completions)
		if !ok || running[i] || done.Has(i) {
			excess = append(excess, p)
			continue
		}
		running[i] = true
		kept++
		keptPods = append(keptPods, p)
	}
	if over := len(keptPods) - int(parallelism(job)); over > 0 {
		// Parallelism lowered: as Kubernetes, delete the pods over it, the least advanced first
		// (their indexes start again later, within the new parallelism), and start none now.
		excess = append(excess, pickExcess(keptPods, over)...)
	}
	if onlyReplaceFailed(job) {
		// A terminating pod's index is started again once that pod is Failed, not before, and
		// it still takes its place within parallelism.
		for _, p := range terminatingPods(all) {
			if i, ok := completionIndex(p, completions); ok && !running[i] && !done.Has(i) {
				running[i] = true
				kept++
			}
		}
	}
	room := int(parallelism(job)) - kept
	if room <= 0 {
		return excess, nil
	}
	// The lowest indexes neither done nor running: the done ones are stepped over a run at a
	// time, so this costs the runs of completedIndexes below them, not the indexes.
	taken := done.Union(indexesOf(slices.Collect(maps.Keys(running))...))
	for i := range taken.Missing(int(completions)) {
		start = append(start, ptrTo(i))
		if len(start) == room {
			break
		}
	}
	return excess, start
}

// pickExcess chooses n pods to delete, the least advanced first, in the order of Kubernetes'
// ActivePods: not yet scheduled; Pending, then Unknown, then Running; not ready; ready more
// recently; more restarts of a container; created more recently.
func pickExcess(pods []*corev1.Pod, n int) []*corev1.Pod {
	sorted := append([]*corev1.Pod(nil), pods...)
	sort.SliceStable(sorted, func(i, j int) bool { return lessActive(sorted[i], sorted[j]) })
	return sorted[:n]
}

// lessActive orders pods as Kubernetes' ActivePods, the least advanced first.
func lessActive(a, b *corev1.Pod) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if pa, pb := phaseRank[a.Status.Phase], phaseRank[b.Status.Phase]; pa != pb {
		return pa < pb
	}
	if podstate.IsReady(a) != podstate.IsReady(b) {
		return !podstate.IsReady(a)
	}
	if podstate.IsReady(a) {
		ta, tb := podstate.ReadyCondition(a).LastTransitionTime, podstate.ReadyCondition(b).LastTransitionTime
		if !ta.Equal(&tb) {
			return laterOrZero(ta, tb)
		}
	}
	if ra, rb := maxRestarts(a), maxRestarts(b); ra != rb {
		return ra > rb
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return laterOrZero(a.CreationTimestamp, b.CreationTimestamp)
	}
	return false
}

var phaseRank = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

// laterOrZero: a is unset, or later than b.
func laterOrZero(a, b metav1.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero()
	}
	return a.After(b.Time)
}

func maxRestarts(p *corev1.Pod) int32 {
	var most int32
	for _, s := range p.Status.ContainerStatuses {
		most = max(most, s.RestartCount)
	}
	return most
}

// podFor builds a Job's pod from its template: the tracking finalizer, a controller reference and,
// for an Indexed Job, the completion index as annotation and label and a stable hostname.
func podFor(job *batchv1.Job, index *int, prior indexFailures) *corev1.Pod {
	t := job.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    job.Name + "-",
			Namespace:       job.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      append(t.Finalizers, batchv1.JobTrackingFinalizer),
			OwnerReferences: []metav1.OwnerReference{controllerref.New(job, controllerKind)},
		},
		Spec: t.Spec,
	}
	if index != nil {
		s := strconv.Itoa(*index)
		pod.GenerateName = generateNameWithIndex(job.Name, s)
		addCompletionIndexEnv(pod.Spec.InitContainers)
		addCompletionIndexEnv(pod.Spec.Containers)
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Annotations[batchv1.JobCompletionIndexAnnotation] = s
		if perIndex(job) {
			pod.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(int(prior.count))
			if prior.ignored > 0 {
				pod.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(prior.ignored))
			}
		}
		pod.Labels[batchv1.JobCompletionIndexAnnotation] = s
		// As in Kubernetes, the index names the host even over the
		// template's hostname: with a headless Service as subdomain, every
		// index is reachable as <job>-<index>.
		pod.Spec.Hostname = job.Name + "-" + s
	}
	return pod
}

// generateNameWithIndex is <job>-<index>-, with the job name cut short so
// the prefix leaves room for the API server's random suffix in a name.
func generateNameWithIndex(jobName, index string) string {
	suffix := "-" + index + "-"
	if len(jobName)+len(suffix) > names.MaxGeneratedNameLength {
		jobName = jobName[:names.MaxGeneratedNameLength-len(suffix)]
	}
	return jobName + suffix
}

// addCompletionIndexEnv gives each container JOB_COMPLETION_INDEX from the
// pod's completion-index annotation, unless the template sets it itself.
func addCompletionIndexEnv(containers []corev1.Container) {
	for i := range containers {
		c := &containers[i]
		if slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == completionIndexEnv }) {
			continue
		}
		c.Env = append(c.Env, corev1.EnvVar{Name: completionIndexEnv, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{
				APIVersion: "v1",
				FieldPath:  "metadata.annotations['" + batchv1.JobCompletionIndexAnnotation + "']",
			},
		}})
	}
}

// completionIndexEnv is the variable an indexed Job's containers read their index from.
const completionIndexEnv = "JOB_COMPLETION_INDEX"

func (c *Controller) createPod(ctx context.Context, job *batchv1.Job, index *int, prior indexFailures) error {
	created, err := c.client.CoreV1().Pods(job.Namespace).Create(ctx, podFor(job, index, prior), metav1.CreateOptions{})
	if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		c.recorder.Eventf(job, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating: %v", err)
		return fmt.Errorf("create pod for job %s/%s: %w", job.Namespace, job.Name, err)
	}
	c.recorder.Eventf(job, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: %s", created.Name)
	return nil
}

// deletePods deletes pods. With release, each pod first loses its tracking finalizer, so it is never
// counted as a failure: Kubernetes does so for pods deleted because there are too many or the Job
// is suspended, but keeps the finalizer on the pods a failing Job kills, which count as failed.
// It reports how many pods (and of them ready ones) are deleted or found gone.
func (c *Controller) deletePods(ctx context.Context, key string, job *batchv1.Job, pods []*corev1.Pod, release bool) (podChanges, error) {
	var changes podChanges
	if len(pods) == 0 {
		return changes, nil
	}
	keys := make([]string, len(pods))
	for i, p := range pods {
		keys[i] = p.Namespace + "/" + p.Name
	}
	c.exp.ExpectDeletions(key, keys)
	var wg sync.WaitGroup
	errs := make([]error, len(pods))
	for i, p := range pods {
		wg.Go(func() {
			if release && hasTrackingFinalizer(p) {
				if err := c.removeTrackingFinalizer(ctx, p); err != nil {
					c.exp.DeletionObserved(key, keys[i])
					errs[i] = fmt.Errorf("release pod %s before deleting it: %w", keys[i], err)
					return
				}
				c.released.released(key, p.UID)
			}
			uid := p.UID
			err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			switch {
			case err == nil:
				c.recorder.Eventf(job, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: %s", p.Name)
			case apierrors.IsNotFound(err):
				c.exp.DeletionObserved(key, keys[i]) // its deletion may have been observed already
			default:
				c.exp.DeletionObserved(key, keys[i])
				c.recorder.Eventf(job, corev1.EventTypeWarning, ReasonFailedDelete, "Error deleting: %v", err)
				errs[i] = fmt.Errorf("delete pod %s: %w", keys[i], err)
			}
		})
	}
	wg.Wait()
	for i, p := range pods {
		if errs[i] == nil {
			changes.deleted++
			if podstate.IsReady(p) {
				changes.deletedReady++
			}
		}
	}
	return changes, errors.Join(errs...)
}
