package podruntime

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

func waiting(c *corev1.Container, reason, message string) corev1.ContainerStatus {
	f := false
	return corev1.ContainerStatus{
		Name:    c.Name,
		Image:   c.Image,
		State:   corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}},
		Started: &f,
	}
}

// withPrevious adds the last attempt's termination to a waiting status.
func withPrevious(st corev1.ContainerStatus, c *corev1.Container, previous *krt.ContainerStatus) corev1.ContainerStatus {
	if previous != nil {
		st.LastTerminationState = report(c, *previous, nil).State
		st.RestartCount = int32(previous.Attempt)
	}
	return st
}

// report turns what the container runtime knows into a Kubernetes
// container status; previous, if any, becomes lastState.
func report(c *corev1.Container, s krt.ContainerStatus, previous *krt.ContainerStatus) corev1.ContainerStatus {
	running := s.State == krt.StateRunning
	st := corev1.ContainerStatus{
		Name:         c.Name,
		Image:        ranImage(c, s),
		ImageID:      s.Labels[labelImageID],
		ContainerID:  "containerd://" + s.ID,
		RestartCount: int32(s.Attempt),
		// Probes refine these (Runtime.withProbes).
		Started: &running,
		Ready:   running,
	}
	switch s.State {
	case krt.StateRunning:
		st.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(s.StartedAt)}
	case krt.StateExited:
		st.State.Terminated = &corev1.ContainerStateTerminated{
			ExitCode:    int32(s.ExitCode),
			Reason:      s.Reason,
			StartedAt:   metav1.NewTime(s.StartedAt),
			FinishedAt:  metav1.NewTime(s.FinishedAt),
			ContainerID: st.ContainerID,
		}
	case krt.StateCreated:
		st.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	default:
		st.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerStatusUnknown"}
	}
	if previous != nil && previous.State == krt.StateExited {
		st.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
			ExitCode:    int32(previous.ExitCode),
			Reason:      previous.Reason,
			StartedAt:   metav1.NewTime(previous.StartedAt),
			FinishedAt:  metav1.NewTime(previous.FinishedAt),
			ContainerID: "containerd://" + previous.ID,
		}
	}
	return st
}

// ranImage is the image container s was created from, as the kubelet
// reports the runtime's rather than the spec's: a pod update may have
// changed the spec since (an init container that completed is not run
// again), and the image ID is the old one's too. A container created
// before the spec's image was recorded reports c's.
func ranImage(c *corev1.Container, s krt.ContainerStatus) string {
	if image, recorded := s.Labels[labelSpecImage]; recorded {
		return image
	}
	return c.Image
}
