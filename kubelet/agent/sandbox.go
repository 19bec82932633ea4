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
// so no IP and no container; the pod stays Pending, its status written as
// the kubelet generates it for a pod with no sandbox yet (each container
// waiting in ContainerCreating, or PodInitializing when the pod has init
// containers; PodReadyToStartContainers False), and, once per back-off, a
// Warning FailedCreatePodSandBox Event says why. It returns when to try
// again: the pod's own status write syncs it sooner, which records nothing.
//
// A pod whose status shows containers that ran — started by an agent
// that did not refuse it, in the host's user namespace or with the
// default handler — has them stopped first, so that nothing of it runs
// and its status does not hide them.
func (a *Agent) sandboxRefused(ctx context.Context, key string, pod *corev1.Pod, refusal error) (time.Duration, error) {
	if ranBefore(pod) {
		if a.cfg.Recorder != nil {
			recordKilling(a.cfg.Recorder, pod)
		}
		if err := a.runtime.KillPod(ctx, pod, terminationGrace(pod)); err != nil {
			return 0, fmt.Errorf("stopping containers of %s, refused its sandbox: %w", key, err)
		}
	}
	a.releaseIP(pod.UID)
	status := computeStatus(pod, noSandbox(pod), "", a.hostIP, time.Now(), a.recursiveReadOnly())
	status.StartTime = a.keepStart(pod, status.StartTime)
	if err := a.writeStatus(ctx, key, pod, status); err != nil {
		return 0, err
	}
	retry, try := a.sandboxBackOff.attempt(pod.UID, time.Now())
	if try {
		a.cfg.Logger.Warn("pod sandbox not created", "pod", key, "err", refusal)
		if a.cfg.Recorder != nil {
			a.cfg.Recorder.Eventf(pod, corev1.EventTypeWarning, reasonFailedCreatePodSandBox, messageFailedCreatePodSandBox, refusal)
		}
	}
	// Looked at again when its active deadline runs out, to be failed.
	if deadline, ok := activeDeadline(pod, status.StartTime); ok {
		retry = min(retry, max(time.Until(deadline), time.Millisecond))
	}
	return retry, nil
}

// ranBefore says whether the pod's status shows a container that was
// created: running, or ended with a container ID.
func ranBefore(pod *corev1.Pod) bool {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, s := range list {
			if s.State.Running != nil || s.State.Terminated != nil && s.State.Terminated.ContainerID != "" {
				return true
			}
		}
	}
	return false
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

// noSandbox is the state of a pod's containers while it has no sandbox,
// as the kubelet's convertToAPIContainerStatuses reports containers it
// has no runtime status of: waiting in ContainerCreating, or
// PodInitializing (init and app containers alike) when the pod has init
// containers; restart count and last termination kept from the pod's
// status.
func noSandbox(pod *corev1.Pod) PodState {
	reason := "ContainerCreating"
	if len(pod.Spec.InitContainers) > 0 {
		reason = "PodInitializing"
	}
	waiting := func(containers []corev1.Container, old []corev1.ContainerStatus) []corev1.ContainerStatus {
		out := make([]corev1.ContainerStatus, len(containers))
		for i, c := range containers {
			out[i] = corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: new(bool),
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
			if o := findStatus(old, c.Name); o != nil {
				out[i].RestartCount, out[i].LastTerminationState = o.RestartCount, o.LastTerminationState
			}
		}
		return out
	}
	return PodState{
		InitContainers: waiting(pod.Spec.InitContainers, pod.Status.InitContainerStatuses),
		Containers:     waiting(pod.Spec.Containers, pod.Status.ContainerStatuses),
	}
}

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
