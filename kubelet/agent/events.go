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

// ContainerRef is the kubelet's reference to one container of a pod in its
// Events: the pod, with the container's field path (spec.containers{name}
// or spec.initContainers{name}).
func ContainerRef(pod *corev1.Pod, name string) *corev1.ObjectReference {
	field := "spec.containers{" + name + "}"
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			field = "spec.initContainers{" + name + "}"
		}
	}
	return &corev1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
		ResourceVersion: pod.ResourceVersion, FieldPath: field,
	}
}

func recordContainer(rec record.EventRecorder, pod *corev1.Pod, old *corev1.ContainerStatus, cur corev1.ContainerStatus, pulled string) {
	ref := ContainerRef(pod, cur.Name)
	recordOOM(rec, pod, ref, old, cur)
	started := func() {
		if pulled != "" {
			rec.Event(ref, corev1.EventTypeNormal, "Pulled", pulled)
		}
		rec.Eventf(ref, corev1.EventTypeNormal, "Created", "Created container %s", cur.Name)
		rec.Eventf(ref, corev1.EventTypeNormal, "Started", "Started container %s", cur.Name)
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
		rec.Eventf(ref, corev1.EventTypeWarning, "Failed", "Failed to pull image %q: %s", cur.Image, w.Message)
		rec.Eventf(ref, corev1.EventTypeWarning, "Failed", "Error: %s", w.Reason)
	case "ErrImageNeverPull":
		rec.Eventf(ref, corev1.EventTypeWarning, "ErrImageNeverPull", "Container image %q is not present with pull policy of Never", cur.Image)
		rec.Eventf(ref, corev1.EventTypeWarning, "Failed", "Error: ErrImageNeverPull")
	case "ImagePullBackOff":
		rec.Eventf(ref, corev1.EventTypeNormal, "BackOff", "Back-off pulling image %q", cur.Image)
		rec.Eventf(ref, corev1.EventTypeWarning, "Failed", "Error: ImagePullBackOff")
	case "CrashLoopBackOff":
		rec.Eventf(ref, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s_%s(%s)", cur.Name, pod.Name, pod.Namespace, pod.UID)
	case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
		rec.Eventf(ref, corev1.EventTypeWarning, "Failed", "Error: %s", w.Message)
	}
}

// recordOOM records a Warning when a container incarnation is newly seen
// OOM-killed, in its state or (once restarted or backing off) its last
// state. Kubernetes shows OOMKilled only in the container's status; the
// event puts it where `kubectl describe pod` and `kubectl get events`
// readers look, with the limit that was exceeded.
func recordOOM(rec record.EventRecorder, pod *corev1.Pod, ref *corev1.ObjectReference, old *corev1.ContainerStatus, cur corev1.ContainerStatus) {
	for _, t := range []*corev1.ContainerStateTerminated{cur.State.Terminated, cur.LastTerminationState.Terminated} {
		if t == nil || t.Reason != "OOMKilled" || (old != nil && seenOOM(old, t.ContainerID)) {
			continue
		}
		limit := ""
		for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for _, c := range list {
				if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && c.Name == cur.Name {
					limit = q.String()
				}
			}
		}
		if limit != "" {
			rec.Eventf(ref, corev1.EventTypeWarning, "OOMKilled", "Container %s was OOMKilled (exit code %d): it used more than its memory limit of %s", cur.Name, t.ExitCode, limit)
		} else {
			rec.Eventf(ref, corev1.EventTypeWarning, "OOMKilled", "Container %s was OOMKilled (exit code %d)", cur.Name, t.ExitCode)
		}
		return
	}
}

func seenOOM(old *corev1.ContainerStatus, containerID string) bool {
	for _, t := range []*corev1.ContainerStateTerminated{old.State.Terminated, old.LastTerminationState.Terminated} {
		if t != nil && t.Reason == "OOMKilled" && t.ContainerID == containerID {
			return true
		}
	}
	return false
}
