package agent

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Runtime runs a pod's containers. The agent calls it from one goroutine per
// pod at a time.
type Runtime interface {
	// Name and Version describe the runtime for node status
	// (containerRuntimeVersion "name://version").
	Name() string
	Version(ctx context.Context) (string, error)
	// SyncPod brings the pod's containers towards its spec (given the IP the
	// agent assigned) and reports their state.
	SyncPod(ctx context.Context, pod *corev1.Pod, podIP string) (PodState, error)
	// KillPod stops every container of the pod, giving them grace to exit,
	// and releases what the runtime holds for it.
	KillPod(ctx context.Context, pod *corev1.Pod, grace time.Duration) error
}

// PodState is what a runtime knows about a pod's containers.
type PodState struct {
	InitContainers []corev1.ContainerStatus
	Containers     []corev1.ContainerStatus
	// Pulled tells, by container name, how the image of the container
	// attempt reported here was made present, as the kubelet's Pulled
	// Event says it (`Container image "x" already present on machine`);
	// recorded when the attempt is first seen. Empty when the runtime
	// does not tell.
	Pulled map[string]string
	// RecheckAfter, if positive, is when the runtime expects the pod to
	// change without anything happening to it (a CrashLoopBackOff or an
	// image pull back-off ends): the agent syncs it again by then.
	RecheckAfter time.Duration
}

// PodStopper is a runtime that can stop a pod's containers without
// releasing them and report how each ended. The agent writes that as the
// pod's terminal status before it deletes the pod, as the kubelet does (a
// Job judges a deleted pod by its phase and exit codes); KillPod then
// releases what is left. Without it, the terminal status is made from the
// last reported one.
type PodStopper interface {
	StopPod(ctx context.Context, pod *corev1.Pod, grace time.Duration) (PodState, error)
}

// SandboxStopper is a runtime that can release what a pod that completed
// or failed holds besides its containers (its network), as the kubelet
// stops a finished pod's sandbox while the containers and their logs stay
// until the pod is deleted. The agent then gives the pod's IP to later
// pods and reports PodReadyToStartContainers False. Without it, a finished
// pod keeps its IP until it is deleted.
type SandboxStopper interface {
	StopSandbox(ctx context.Context, pod *corev1.Pod) error
}

// ChangeNotifier is a runtime that tells the agent when a pod's
// containers change on their own — a process exits, a probe's verdict
// turns — so that the pod is synced at once rather than at the next
// periodic resync (the kubelet's pod lifecycle events).
type ChangeNotifier interface {
	// OnPodChange sets the function told the UID of a pod that changed.
	// It is set once, before the first SyncPod.
	OnPodChange(changed func(podUID types.UID))
}
