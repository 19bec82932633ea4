package agent

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// recordTransitions records the Events a kubelet records for what changed
// between a pod's reported container statuses (old) and the new ones:
// containers that started (with how their image was found, when the
// runtime says: pulled by container name), and the waiting reasons that
// explain a pod not running (image pulls failing, back-offs, bad
// configuration). Events come from transitions, so a state that persists
// is not recorded again on every sync.
func recordTransitions(rec record.EventRecorder, pod *corev1.Pod, old, cur *corev1.PodStatus, pulled map[string]string) {
	for _, pair := range [][2][]corev1.ContainerStatus{
		{old.InitContainerStatuses, cur.InitContainerStatuses},
		{old.ContainerStatuses, cur.ContainerStatuses},
	} {
		for _, c := range pair[1] {
			recordContainer(rec, pod, findStatus(pair[0], c.Name), c, pulled[c.Name])
		}
	}
}

func findStatus(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

func recordContainer(rec record.EventRecorder, pod *corev1.Pod, old *corev1.ContainerStatus, cur corev1.ContainerStatus, pulled string) {
	started := func() {
		if pulled != "" {
			rec.Event(pod, corev1.EventTypeNormal, "Pulled", pulled)
		}
		rec.Eventf(pod, corev1.EventTypeNormal, "Created", "Created container %s", cur.Name)
		rec.Eventf(pod, corev1.EventTypeNormal, "Started", "Started container %s", cur.Name)
	}
	if r := cur.State.Running; r != nil {
		if old == nil || old.State.Running == nil || old.ContainerID != cur.ContainerID {
			started()
		}
		return
	}
	// A container that ran to completion between two syncs (an init
	// container, as a hollow node reports it) was created and started too.
	if t := cur.State.Terminated; t != nil && t.ContainerID != "" && !t.StartedAt.IsZero() {
		if old == nil || old.ContainerID != t.ContainerID && (old.State.Terminated == nil || old.State.Terminated.ContainerID != t.ContainerID) {
			started()
		}
		return
	}
	w := cur.State.Waiting
	if w == nil {
		return
	}
	if old != nil && old.State.Waiting != nil && old.State.Waiting.Reason == w.Reason && old.RestartCount == cur.RestartCount {
		return // no news
	}
	switch w.Reason {
	case "ErrImagePull", "InvalidImageName":
		rec.Eventf(pod, corev1.EventTypeWarning, "Failed", "Failed to pull image %q: %s", cur.Image, w.Message)
		rec.Eventf(pod, corev1.EventTypeWarning, "Failed", "Error: %s", w.Reason)
	case "ImagePullBackOff":
		rec.Eventf(pod, corev1.EventTypeNormal, "BackOff", "Back-off pulling image %q", cur.Image)
		rec.Eventf(pod, corev1.EventTypeWarning, "Failed", "Error: ImagePullBackOff")
	case "CrashLoopBackOff":
		rec.Eventf(pod, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s_%s(%s)", cur.Name, pod.Name, pod.Namespace, pod.UID)
	case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
		rec.Eventf(pod, corev1.EventTypeWarning, "Failed", "Error: %s", w.Message)
	}
}
