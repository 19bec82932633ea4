package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Pods whose sandbox skiff's runtimes cannot make as asked, which must not
// run: they would silently get less isolation than they asked for. The
// agent refuses them here, in one place for every runtime, before any
// runtime sees them, as the v1.33 kubelet fails to generate a pod's
// sandbox config (NamespacesForPod):
//
//   - a pod naming a RuntimeClass (spec.runtimeClassName): skiff serves
//     none, so its runtime handler cannot be looked up
//     (LookupRuntimeHandler), and the runtime would have run it with the
//     default one (runc); the API server refuses to create such a pod, so
//     this catches those stored before it did;
//   - a pod asking for a user namespace of its own (spec.hostUsers: false,
//     UserNamespacesSupport, beta and on in v1.33): skiff's runtimes run
//     every container in the host's user namespace and their one handler
//     says so (DefaultRuntimeHandlers: userNamespaces false), and the
//     kubelet refuses such a pod (GetOrCreateUserNamespaceMappings) when
//     its handler does not support user namespaces.

const (
	// reasonFailedCreatePodSandBox and its message are the kubelet's
	// Event when a sandbox cannot be created (kuberuntime's SyncPod).
	reasonFailedCreatePodSandBox  = "FailedCreatePodSandBox"
	messageFailedCreatePodSandBox = "Failed to create pod sandbox: %v"

	// sandboxRetryPeriod is the kubelet's pod worker back-off after a
	// failed sync (backOffPeriod, jittered by up to a half): how soon a
	// pod whose sandbox could not be created is tried again.
	sandboxRetryPeriod = 10 * time.Second
)

// sandboxConfigRefusal says why the pod cannot have its sandbox on a
// runtime with these handlers, in the v1.33 kubelet's words and its order,
// or nil when it can. Its RuntimeClass is looked up first: one named (not
// "", the default class) is not found, as the kubelet's lister says it;
// the pod's handler is then the default (""). A pod in the host's user
// namespace (hostUsers true or unset) needs nothing of it; one asking for
// its own needs it to support user namespaces. A handler claiming them
// must have a runtime that makes them; skiff's claim none.
func sandboxConfigRefusal(pod *corev1.Pod, handlers []corev1.NodeRuntimeHandler) error {
	if err := runtimeClassRefusal(pod); err != nil {
		return err
	}
	if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		return nil
	}
	supported, err := handlerSupportsUserNamespaces(handlers, "")
	if err == nil && supported {
		return nil
	}
	const msg = "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	if err != nil {
		return fmt.Errorf("%s: %w", msg, err)
	}
	return errors.New(msg)
}

// runtimeClassRefusal is the kubelet's LookupRuntimeHandler in a cluster
// without RuntimeClasses: nil for the default class (no name, or ""), for
// any other its lister's NotFound, `runtimeclass.node.k8s.io "x" not found`.
func runtimeClassRefusal(pod *corev1.Pod) error {
	if name := pod.Spec.RuntimeClassName; name != nil && *name != "" {
		return apierrors.NewNotFound(nodev1.Resource("runtimeclass"), *name)
	}
	return nil
}

// handlerSupportsUserNamespaces is the kubelet's HandlerSupportsUserNamespaces:
// whether the runtime handler called name supports user namespaces, an
// error when the runtime reports no handlers or not that one.
func handlerSupportsUserNamespaces(handlers []corev1.NodeRuntimeHandler, name string) (bool, error) {
	if handlers == nil {
		return false, errors.New("runtime handlers are not set")
	}
	for _, h := range handlers {
		if h.Name == name {
			return h.Features != nil && h.Features.UserNamespaces != nil && *h.Features.UserNamespaces, nil
		}
	}
	return false, fmt.Errorf("the handler %q is not known", name)
}

// sandboxRefusal is sandboxConfigRefusal against the runtime's handlers;
// known is false while a DeferredRuntime is not open yet and cannot say
// (a RuntimeClass is refused without the runtime; a pod in the host's user
// namespace needs no answer).
func (a *Agent) sandboxRefusal(pod *corev1.Pod) (known bool, refusal error) {
	if err := runtimeClassRefusal(pod); err != nil {
		return true, err
	}
	if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		return true, nil
	}
	handlers, known := a.runtimeHandlers()
	if !known {
		return false, nil
	}
	return true, sandboxConfigRefusal(pod, handlers)
}

// runtimeHandlers are the runtime's handlers (nil for a runtime that
// reports none); known is false while a DeferredRuntime is not open yet
// and cannot say.
func (a *Agent) runtimeHandlers() (handlers []corev1.NodeRuntimeHandler, known bool) {
	rt := a.runtime
	if d, ok := rt.(*DeferredRuntime); ok {
		if rt = d.Opened(); rt == nil {
			return nil, false
		}
	}
	if l, ok := rt.(RuntimeHandlerLister); ok {
		return l.RuntimeHandlers(), true
	}
	return nil, true
}

// sandboxRefused handles a pod whose sandbox cannot be created (refusal
// says why), as the kubelet handles a failed sandbox creation: no sandbox,
// so no IP and no container; its status is written as the kubelet
// generates it for a pod whose sandbox is gone (noSandbox), and, once per
// back-off, a Warning FailedCreatePodSandBox Event says why. A pod that
// never ran stays Pending, each container waiting in ContainerCreating (or
// PodInitializing when the pod has init containers),
// PodReadyToStartContainers False. It returns when to try again: the pod's
// own status write syncs it sooner, which records nothing.
//
// Whatever an agent that did not refuse it may have started of it — in
// the host's user namespace or with the default handler — is stopped
// first, once (stopRefused). Its containers reported running are then
// reported killed: under restartPolicy Never the pod fails, as the
// kubelet makes it, and its status is final from then on, as a finished
// pod's; under OnFailure or Always they wait to restart, the kill as
// their last state.
func (a *Agent) sandboxRefused(ctx context.Context, key string, pod *corev1.Pod, refusal error) (time.Duration, error) {
	if d, ok := a.runtime.(*DeferredRuntime); ok && d.Opened() == nil {
		// What an agent before this one left cannot be stopped yet; the
		// pod is synced again once the runtime is open.
		return 2 * time.Second, nil
	}
	if err := a.stopRefused(ctx, key, pod); err != nil {
		return 0, err
	}
	a.releaseIP(pod.UID)
	now := time.Now()
	status := computeStatus(pod, noSandbox(pod), "", a.hostIP, now, a.recursiveReadOnly())
	status.StartTime = a.keepStart(pod, status.StartTime)
	final := status.Phase == corev1.PodFailed || status.Phase == corev1.PodSucceeded
	if final {
		// As the kubelet's status manager ends a pod it stopped for good.
		endContainers(&pod.Spec, status, metav1.NewTime(now))
		stoppedConditions(status, metav1.NewTime(now))
	}
	if err := a.writeStatus(ctx, key, pod, status); err != nil {
		return 0, err
	}
	retry, try := a.sandboxBackOff.attempt(pod.UID, now)
	if try {
		a.cfg.Logger.Warn("pod sandbox not created", "pod", key, "err", refusal)
		if a.cfg.Recorder != nil {
			a.cfg.Recorder.Eventf(pod, corev1.EventTypeWarning, reasonFailedCreatePodSandBox, messageFailedCreatePodSandBox, refusal)
		}
	}
	if final {
		// Only this status is written from here on, until the pod goes.
		a.sandboxStopped(pod, status)
		return 0, nil
	}
	// Looked at again when its active deadline runs out, to be failed.
	if deadline, ok := activeDeadline(pod, status.StartTime); ok {
		retry = min(retry, max(time.Until(deadline), time.Millisecond))
	}
	return retry, nil
}

// stopRefused stops what may run of a pod refused its sandbox, once per
// pod, at its first refusal, whatever its status says: an agent may have
// started containers and not lived to report them, or a container may be
// crash-looping between two runs. The runtime's KillPod does nothing for a
// pod it has nothing of. The Killing Events are those of the containers
// the status shows running, recorded once even if the kill is retried.
func (a *Agent) stopRefused(ctx context.Context, key string, pod *corev1.Pod) error {
	a.mu.Lock()
	done, noticed := a.refusedStops[pod.UID]
	a.refusedStops[pod.UID] = done
	a.mu.Unlock()
	if done {
		return nil
	}
	if a.cfg.Recorder != nil && !noticed {
		recordKilling(a.cfg.Recorder, pod)
	}
	if err := a.runtime.KillPod(ctx, pod, terminationGrace(pod)); err != nil {
		return fmt.Errorf("stopping containers of %s, refused its sandbox: %w", key, err)
	}
	a.mu.Lock()
	a.refusedStops[pod.UID] = true
	a.mu.Unlock()
	return nil
}

// releaseIP gives back an address the pod may hold (from before its
// runtime opened, or from an agent that ran it): without a sandbox it
// has none.
func (a *Agent) releaseIP(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ips != nil {
		a.ips.release(string(uid))
	}
}

// noSandbox is the state of a pod's containers once its sandbox is gone
// (or was never made), as the kubelet's convertToAPIContainerStatuses
// reports containers the runtime has nothing of:
//
//   - one whose status says it ended stays as it ended (a completed init
//     container, one that failed): the API server refuses a container
//     of a Never or OnFailure pod going back from terminated;
//   - one whose status says it runs was stopped (stopRefused) and cannot
//     be located any more: it waits to restart with that as its last
//     state (exit code 137, ContainerStatusUnknown) and one restart
//     more, as the kubelet infers a container that used to run, unless
//     it has a last state already; under restartPolicy Never it does not
//     restart but ends so, as the kubelet's status manager ends a
//     container it cannot locate in a pod it stopped for good;
//   - any other waits in ContainerCreating, or PodInitializing (init and
//     app containers alike) when the pod has init containers, its restart
//     count and last state kept.
func noSandbox(pod *corev1.Pod) PodState {
	reason := "ContainerCreating"
	if len(pod.Spec.InitContainers) > 0 {
		reason = "PodInitializing"
	}
	never := pod.Spec.RestartPolicy == corev1.RestartPolicyNever
	report := func(containers []corev1.Container, old []corev1.ContainerStatus) []corev1.ContainerStatus {
		out := make([]corev1.ContainerStatus, len(containers))
		for i, c := range containers {
			o := findStatus(old, c.Name)
			if o != nil && o.State.Terminated != nil {
				out[i] = *o.DeepCopy()
				continue
			}
			out[i] = corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: new(bool),
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
			if o == nil {
				continue
			}
			out[i].RestartCount, out[i].LastTerminationState = o.RestartCount, o.LastTerminationState
			switch {
			case o.State.Running == nil:
			case never:
				out[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: reasonContainerStatusUnknown, Message: messageNotLocatedTerminated}}
			case out[i].LastTerminationState.Terminated == nil:
				out[i].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: reasonContainerStatusUnknown, Message: messageNotLocatedRestarted}}
				out[i].RestartCount++
			}
		}
		return out
	}
	return PodState{
		InitContainers: report(pod.Spec.InitContainers, pod.Status.InitContainerStatuses),
		Containers:     report(pod.Spec.Containers, pod.Status.ContainerStatuses),
	}
}

// The kubelet's words for a container it can no longer locate: in a pod
// it stopped for good (its status manager's TerminatePod), and one that
// used to run (convertToAPIContainerStatuses).
const (
	reasonContainerStatusUnknown = "ContainerStatusUnknown"
	messageNotLocatedTerminated  = "The container could not be located when the pod was terminated"
	messageNotLocatedRestarted   = "The container could not be located when the pod was deleted.  The container used to be Running"
)

// sandboxBackOff spaces the attempts at the sandboxes of refused pods, as
// the kubelet's pod workers back off after a failed sync.
type sandboxBackOff struct {
	mu   sync.Mutex
	next map[types.UID]time.Time
}

// attempt says whether the pod's sandbox is to be tried at now, and how
// long until the next try.
func (b *sandboxBackOff) attempt(uid types.UID, now time.Time) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if next, ok := b.next[uid]; ok && now.Before(next) {
		return next.Sub(now), false
	}
	if b.next == nil {
		b.next = map[types.UID]time.Time{}
	}
	d := wait.Jitter(sandboxRetryPeriod, 0.5)
	b.next[uid] = now.Add(d)
	return d, true
}

// forget drops the pod's back-off.
func (b *sandboxBackOff) forget(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.next, uid)
}
