package agent

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/skiffkube/skiff/apiserver/qos"
	"github.com/skiffkube/skiff/kubelet/eviction"
)

// PressureMonitor is the node's eviction manager (eviction.Manager): it
// says which pressure conditions hold, and while it runs it evicts pods
// through the agent.
type PressureMonitor interface {
	UnderPressure(corev1.NodeConditionType) bool
	Run(ctx context.Context, pods eviction.Pods, changed func())
	// Admit says whether a new pod may start under the current pressure,
	// and why not.
	Admit(pod *corev1.Pod) (bool, string)
}

// evictionTimeout bounds how long an eviction waits for the pod's worker,
// as the kubelet waits for a pod's clean-up.
const evictionTimeout = 30 * time.Second

// Kubernetes' pod condition of a pod the kubelet terminated.
const (
	disruptionTarget     corev1.PodConditionType = "DisruptionTarget"
	terminationByKubelet                         = "TerminationByKubelet"
)

// rejectedPrefix begins the status message of a pod the agent refused to admit.
const rejectedPrefix = "Pod was rejected: "

type evictRequest struct {
	message string
	done    chan error
}

// ActivePods are this node's pods that were admitted (the agent has
// started syncing them) and have not finished (eviction.Pods).
func (a *Agent) ActivePods() []*corev1.Pod {
	var out []*corev1.Pod
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, obj := range a.indexer.List() {
		p := obj.(*corev1.Pod)
		key, err := cache.MetaNamespaceKeyFunc(p)
		if err != nil || p.Spec.NodeName != a.cfg.NodeName || p.DeletionTimestamp != nil || a.failed[p.UID] != nil || podFinished(p) {
			continue
		}
		if t := a.tracked[key]; t == nil || t.UID != p.UID {
			continue // not admitted yet
		}
		out = append(out, p)
	}
	return out
}

// EvictPod has the pod's worker stop its containers at once and fail it
// with reason Evicted (eviction.Pods); it returns once the containers are
// stopped, the status being written then (and tried again until it is).
func (a *Agent) EvictPod(ctx context.Context, pod *corev1.Pod, message string) error {
	key, err := cache.MetaNamespaceKeyFunc(pod)
	if err != nil {
		return err
	}
	req := &evictRequest{message: message, done: make(chan error, 1)}
	a.mu.Lock()
	a.evictions[pod.UID] = req
	a.mu.Unlock()
	a.queue.Add(key)
	t := time.NewTimer(evictionTimeout)
	defer t.Stop()
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		a.mu.Lock()
		delete(a.evictions, pod.UID)
		a.mu.Unlock()
		return fmt.Errorf("pod %s was not stopped within %s", key, evictionTimeout)
	}
}

// takeEviction returns (and forgets) the eviction asked for pod uid.
func (a *Agent) takeEviction(uid types.UID) *evictRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	req := a.evictions[uid]
	delete(a.evictions, uid)
	return req
}

// failure is a pod the agent failed for good outside its sync, evicted or
// refused at admission, whose containers no longer run. Its Failed status is
// kept until the API has it, as the kubelet's status manager keeps a pod's
// status until written: a write that fails (the API server briefly
// unavailable) is tried again at the pod's next syncs, with the queue's
// backoff, without stopping the pod or recording its Event again.
type failure struct {
	reason, message string
	at              metav1.Time
	// refused says the admission refused the pod (rejectedStatus); else it
	// was evicted (evictedStatus).
	refused bool
	// written is set, under Agent.mu, once the status is written (or the
	// pod is gone).
	written bool
}

// evict kills the pod's containers without grace (a hard threshold, as the
// kubelet), gives its address back to the node's pool and records a Warning
// Event. It returns the failure whose status (Failed, reason Evicted) is to
// be written; from then on the agent leaves the pod alone until it is
// deleted.
func (a *Agent) evict(ctx context.Context, pod *corev1.Pod, message string) (*failure, error) {
	f := &failure{reason: eviction.Reason, message: message}
	a.mu.Lock()
	a.failed[pod.UID] = f
	a.mu.Unlock()
	if err := a.runtime.KillPod(ctx, pod, 0); err != nil {
		a.mu.Lock()
		delete(a.failed, pod.UID)
		a.mu.Unlock()
		return nil, fmt.Errorf("stopping containers of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	// KillPod tore the pod's network down: its address is free for the
	// pods that come next, as the kubelet's is once the sandbox goes.
	a.mu.Lock()
	f.at = metav1.Now()
	if a.ips != nil {
		a.ips.release(string(pod.UID))
	}
	a.mu.Unlock()
	if a.cfg.Recorder != nil {
		a.cfg.Recorder.Event(pod, corev1.EventTypeWarning, eviction.Reason, message)
	}
	return f, nil
}

// writeFailure writes the Failed status of a pod the agent evicted or
// refused, unless that is done. A refusal is written over the cached pod,
// as the pod never ran; an eviction over the pod read afresh, whose
// containers' last states the cache may lag behind. A pod gone, or
// replaced by one of the same name, is no error.
func (a *Agent) writeFailure(ctx context.Context, pod *corev1.Pod, f *failure) error {
	a.mu.Lock()
	written := f.written
	a.mu.Unlock()
	if written {
		return nil
	}
	var err error
	if f.refused {
		upd := pod.DeepCopy()
		upd.Status = rejectedStatus(pod, f.reason, f.message, f.at)
		if _, err = a.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("refusing pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	} else {
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := a.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if cur.UID != pod.UID {
				return nil
			}
			evictedStatus(&cur.Spec, &cur.Status, f.message, f.at)
			_, err = a.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failing evicted pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	a.mu.Lock()
	f.written = true
	a.mu.Unlock()
	return nil
}

// admit decides whether a pod that has not started may run here, as the
// kubelet's admission: not while the node is under a pressure that keeps it
// out (PressureMonitor.Admit, reason Evicted), nor when the kubelet's
// predicate admission refuses it (refusal: another OS, no room beside the
// pods admitted before it, node affinity, host ports taken, an untolerated
// NoExecute taint). A refused pod is failed with that reason and a Warning
// Event. Pods are admitted one at a time, each counted by the next. It
// reports whether the pod was refused.
func (a *Agent) admit(ctx context.Context, key string, pod *corev1.Pod) (bool, error) {
	if (pod.Status.Phase != corev1.PodPending && pod.Status.Phase != "") ||
		len(pod.Status.ContainerStatuses) > 0 || len(pod.Status.InitContainerStatuses) > 0 {
		return false, nil // started before (an agent restart): admitted then
	}
	a.admitMu.Lock()
	defer a.admitMu.Unlock()
	var reason, message string
	if a.cfg.Pressure != nil {
		if ok, why := a.cfg.Pressure.Admit(pod); !ok {
			reason, message = eviction.Reason, why
		}
	}
	if reason == "" {
		var err error
		if reason, message, err = a.refusal(ctx, pod); err != nil {
			return true, err
		}
	}
	a.mu.Lock()
	a.tracked[key] = pod // admitted, or so that its deletion clears what is kept of it
	if reason == "" {
		a.keys[pod.UID] = key // counted by the next admission
		a.mu.Unlock()
		return false, nil
	}
	// The refusal stands from here on: a status write that fails is
	// tried again at the pod's next syncs (writeFailure), the pod not
	// admitted again.
	f := &failure{reason: reason, message: message, at: metav1.Now(), refused: true}
	a.failed[pod.UID] = f
	a.mu.Unlock()
	if a.cfg.Recorder != nil {
		a.cfg.Recorder.Event(pod, corev1.EventTypeWarning, reason, message)
	}
	return true, a.writeFailure(ctx, pod, f)
}

// rejectedStatus is the status of a pod the agent refused to admit, as the kubelet's
// rejectPod and status manager write it: phase Failed with the reason and, after "Pod was
// rejected: ", the message (the Event has the bare message), the QoS class, a start time;
// of the conditions only those the kubelet does not own (PodScheduled is its own).
func rejectedStatus(pod *corev1.Pod, reason, message string, now metav1.Time) corev1.PodStatus {
	st := corev1.PodStatus{Phase: corev1.PodFailed, Reason: reason, Message: rejectedPrefix + message,
		QOSClass: qos.Of(pod), StartTime: pod.Status.StartTime}
	if st.StartTime == nil {
		st.StartTime = &now
	}
	for _, c := range pod.Status.Conditions {
		switch c.Type {
		case corev1.PodScheduled, corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady:
		default:
			st.Conditions = append(st.Conditions, c)
		}
	}
	return st
}

// evictedStatus is the status of a pod the kubelet evicted: phase Failed,
// reason Evicted, its containers terminated (killed: 137), not ready, and
// the DisruptionTarget condition.
func evictedStatus(spec *corev1.PodSpec, st *corev1.PodStatus, message string, now metav1.Time) {
	st.Phase, st.Reason, st.Message = corev1.PodFailed, eviction.Reason, message
	endContainers(spec, st, now)
	stoppedConditions(st, now)
	setPodCondition(st, corev1.PodCondition{Type: disruptionTarget, Status: corev1.ConditionTrue, Reason: terminationByKubelet, Message: message, LastTransitionTime: now})
}

// endContainers marks the containers of the status ended, as the kubelet reports a pod it
// stopped: one still reported running was killed (137); one waiting that should have run
// could not be located (137, ContainerStatusUnknown) — an app container once the pod had
// initialized, an init container up to the last one that had started — while those the pod
// never came to stay waiting, with no exit code to read. Only init containers that
// completed (not sidecars) stay ready.
func endContainers(spec *corev1.PodSpec, st *corev1.PodStatus, now metav1.Time) {
	kill := func(list []corev1.ContainerStatus, reached int) {
		for i := range list {
			c := &list[i]
			c.Started = new(bool)
			if r := c.State.Running; r != nil {
				c.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: "Error", StartedAt: r.StartedAt, FinishedAt: now, ContainerID: c.ContainerID}}
			}
			if c.State.Waiting != nil && i < reached {
				c.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: reasonContainerStatusUnknown, Message: messageNotLocatedTerminated, FinishedAt: now}}
			}
			j := slices.IndexFunc(spec.InitContainers, func(ic corev1.Container) bool { return ic.Name == c.Name })
			c.Ready = j >= 0 && !restartable(&spec.InitContainers[j]) && c.State.Terminated != nil && c.State.Terminated.ExitCode == 0
		}
	}
	apps := 0
	if hadInitialized(spec, st) {
		apps = len(st.ContainerStatuses)
	}
	kill(st.InitContainerStatuses, reachedInits(st.InitContainerStatuses))
	kill(st.ContainerStatuses, apps)
}

// hadInitialized says whether the status shows the pod initialized: it has no init
// containers, an app container left waiting at some time, or the last init container
// completed (a sidecar: started).
func hadInitialized(spec *corev1.PodSpec, st *corev1.PodStatus) bool {
	if len(spec.InitContainers) == 0 {
		return true
	}
	for _, c := range st.ContainerStatuses {
		if c.State.Waiting == nil || c.LastTerminationState.Terminated != nil {
			return true
		}
	}
	last := &spec.InitContainers[len(spec.InitContainers)-1]
	c := findStatus(st.InitContainerStatuses, last.Name)
	switch {
	case c == nil:
		return false
	case restartable(last):
		return c.State.Running != nil && c.Started != nil && *c.Started
	}
	for _, t := range []*corev1.ContainerStateTerminated{c.State.Terminated, c.LastTerminationState.Terminated} {
		if t != nil && t.ExitCode == 0 {
			return true
		}
	}
	return false
}

// reachedInits is how many init containers, in order, the pod came to: up to the last one
// that left waiting at some time, at least the first.
func reachedInits(list []corev1.ContainerStatus) int {
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].State.Waiting == nil || list[i].LastTerminationState.Terminated != nil {
			return i + 1
		}
	}
	return min(len(list), 1)
}

// stoppedConditions sets the kubelet's conditions of a pod it stopped for good, once
// st.Phase is terminal: ContainersReady and Ready False with the phase's reason
// (PodCompleted or PodFailed), and PodReadyToStartContainers False, its sandbox gone.
func stoppedConditions(st *corev1.PodStatus, now metav1.Time) {
	reason := reasonPodFailed
	if st.Phase == corev1.PodSucceeded {
		reason = reasonPodCompleted
	}
	setPodCondition(st, corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse, LastTransitionTime: now})
	setPodCondition(st, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: reason, LastTransitionTime: now})
	setPodCondition(st, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: reason, LastTransitionTime: now})
}

// setPodCondition replaces the condition of c's type (keeping its transition time when the
// status stays) or adds c.
func setPodCondition(st *corev1.PodStatus, c corev1.PodCondition) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == c.Type {
			if st.Conditions[i].Status == c.Status {
				c.LastTransitionTime = st.Conditions[i].LastTransitionTime
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

// writeTerminated writes the terminal status of a pod being deleted whose containers have
// stopped: how each ended (final, from the runtime; nil: from the last reported status, the
// running ones killed) and phase Succeeded when every container exited 0, else Failed, as the
// kubelet since Kubernetes 1.27. A pod already finished, or gone, is left as it is.
func (a *Agent) writeTerminated(ctx context.Context, pod *corev1.Pod, final *PodState) error {
	now := metav1.Now()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := a.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != pod.UID || podFinished(cur) {
			return nil
		}
		if final != nil && len(final.InitContainers)+len(final.Containers) > 0 {
			fillFromSpec(&cur.Spec, &cur.Status, *final, a.recursiveReadOnly())
			cur.Status.InitContainerStatuses, cur.Status.ContainerStatuses = final.InitContainers, final.Containers
		}
		endContainers(&cur.Spec, &cur.Status, now)
		cur.Status.Phase = corev1.PodFailed
		if allSucceeded(cur) {
			cur.Status.Phase = corev1.PodSucceeded
		}
		stoppedConditions(&cur.Status, now)
		_, err = a.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing the final status of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// allSucceeded reports whether every container of the pod is reported exited with 0.
func allSucceeded(pod *corev1.Pod) bool {
	if len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, c := range pod.Status.ContainerStatuses {
		if t := c.State.Terminated; t == nil || t.ExitCode != 0 {
			return false
		}
	}
	return true
}
