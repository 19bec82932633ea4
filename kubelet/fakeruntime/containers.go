package fakeruntime

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffkube/skiff/kubelet/agent"
)

// hollowPod is what the runtime remembers of a pod it has seen.
type hollowPod struct {
	started time.Time
	// containers holds each container's current attempt, by name.
	containers map[string]*attempt
}

// attempt is one run of a container: what a real runtime's container is.
type attempt struct {
	n         int32  // how many attempts came before: the restart count
	image     string // the image it was started from
	startedAt time.Time
	// last is how the attempt before it ended (lastState), if any.
	last *corev1.ContainerStateTerminated
}

// attemptOf returns c's current attempt, starting its first with the pod
// from c's image when c is new.
func (hp *hollowPod) attemptOf(c *corev1.Container) *attempt {
	a, ok := hp.containers[c.Name]
	if !ok {
		a = &attempt{image: c.Image, startedAt: hp.started}
		hp.containers[c.Name] = a
	}
	return a
}

func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// exitAt says when an app container's attempt exits as the pod's script
// says (that long after it started); ok is false when it runs until
// stopped.
func exitAt(pod *corev1.Pod, a *attempt) (at time.Time, code int32, ok bool) {
	after, code, ok := script(pod)
	if !ok {
		return time.Time{}, 0, false
	}
	return a.startedAt.Add(after), code, true
}

// appExited says whether app container attempt a has exited by now.
func appExited(pod *corev1.Pod, a *attempt, now time.Time) bool {
	at, _, ok := exitAt(pod, a)
	return ok && !now.Before(at)
}

// finishedAt says whether the pod's app containers have exited for good by
// now (they are not restarted under Never, nor under OnFailure with 0),
// and when the last one did: the kubelet then stops the sidecars.
func (hp *hollowPod) finishedAt(pod *corev1.Pod, now time.Time) (time.Time, bool) {
	after, code, scripted := script(pod)
	if !scripted || !(pod.Spec.RestartPolicy == corev1.RestartPolicyNever ||
		pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure && code == 0) {
		return time.Time{}, false
	}
	last := hp.started.Add(after) // no attempt exits sooner
	for i := range pod.Spec.Containers {
		a := hp.attemptOf(&pod.Spec.Containers[i])
		if !appExited(pod, a, now) {
			return time.Time{}, false
		}
		if at, _, _ := exitAt(pod, a); at.After(last) {
			last = at
		}
	}
	return last, true
}

// restartChanged restarts, as the kubelet restarts a container whose spec
// hash changed, every running app container and sidecar whose image is no
// longer the spec's, and returns them. Init containers that are not
// sidecars have completed and are not run again; a container that exited
// stays as it ended.
func (hp *hollowPod) restartChanged(pod *corev1.Pod, now time.Time) []*corev1.Container {
	var killed []*corev1.Container
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if a := hp.attemptOf(c); a.image != c.Image && !appExited(pod, a, now) {
			hp.restart(pod, c, now)
			killed = append(killed, c)
		}
	}
	// App containers first: one just restarted keeps the pod from being
	// done, so its sidecars keep running (and restart) too.
	_, finished := hp.finishedAt(pod, now)
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if a := hp.attemptOf(c); isSidecar(c) && a.image != c.Image && !finished {
			hp.restart(pod, c, now)
			killed = append(killed, c)
		}
	}
	return killed
}

// restart ends c's running attempt as the real runtime reports a container
// it stopped with SIGTERM (a process without a handler: 143, "Error") and
// starts the next from c's image at once.
func (hp *hollowPod) restart(pod *corev1.Pod, c *corev1.Container, now time.Time) {
	old := hp.containers[c.Name]
	hp.containers[c.Name] = &attempt{
		n: old.n + 1, image: c.Image, startedAt: now,
		last: &corev1.ContainerStateTerminated{ExitCode: 143, Reason: "Error", StartedAt: metav1.NewTime(old.startedAt),
			FinishedAt: metav1.NewTime(now), ContainerID: containerID(pod, c.Name, old.n)},
	}
}

// containerID names attempt n of a container; the first keeps the name it
// always had.
func containerID(pod *corev1.Pod, name string, n int32) string {
	if n == 0 {
		return fmt.Sprintf("fake://%s/%s", pod.UID, name)
	}
	return fmt.Sprintf("fake://%s/%s/%d", pod.UID, name, n)
}

// state reports every container's current attempt as of now.
func (hp *hollowPod) state(pod *corev1.Pod, now time.Time) agent.PodState {
	var st agent.PodState
	finishedAt, finished := hp.finishedAt(pod, now)
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		a := hp.attemptOf(c)
		s := a.status(pod, c)
		started := metav1.NewTime(a.startedAt)
		switch {
		case !isSidecar(c):
			s.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: started, FinishedAt: started, ContainerID: s.ContainerID}
		case finished:
			// Stopped with the pod, as processes without a SIGTERM
			// handler end.
			s.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 143, Reason: "Error", StartedAt: started,
				FinishedAt: metav1.NewTime(finishedAt), ContainerID: s.ContainerID}
		default:
			s.State.Running = &corev1.ContainerStateRunning{StartedAt: started}
			s.Ready, s.Started = true, new(true)
		}
		st.InitContainers = append(st.InitContainers, s)
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		a := hp.attemptOf(c)
		s := a.status(pod, c)
		started := metav1.NewTime(a.startedAt)
		if at, code, ok := exitAt(pod, a); ok && !now.Before(at) {
			reason := "Completed"
			if code != 0 {
				reason = "Error"
			}
			s.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: started,
				FinishedAt: metav1.NewTime(at), ContainerID: s.ContainerID}
		} else {
			s.State.Running = &corev1.ContainerStateRunning{StartedAt: started}
			s.Ready, s.Started = true, new(true)
		}
		st.Containers = append(st.Containers, s)
	}
	return st
}

// status is the part of c's status that its attempt a decides whatever
// its state: the image it ran (a pod update may have changed the spec's
// since, as for an init container that completed before), its ID, its
// restarts and how the attempt before ended.
func (a *attempt) status(pod *corev1.Pod, c *corev1.Container) corev1.ContainerStatus {
	s := corev1.ContainerStatus{
		Name:         c.Name,
		Image:        a.image,
		ImageID:      "fake://" + a.image,
		ContainerID:  containerID(pod, c.Name, a.n),
		RestartCount: a.n,
		Started:      new(bool),
	}
	if a.last != nil {
		s.LastTerminationState.Terminated = a.last.DeepCopy()
	}
	return s
}
