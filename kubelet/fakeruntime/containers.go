package fakeruntime

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffkube/skiff/kubelet/agent"
	"github.com/skiffkube/skiff/kubelet/crashloop"
)

// hollowPod is what the runtime remembers of a pod it has seen.
type hollowPod struct {
	started time.Time
	// containers holds each container's current attempt, by name.
	containers map[string]*attempt
	// sidecarsStopped says the pod's end has stopped its sidecars.
	sidecarsStopped bool
}

// attempt is one run of a container: what a real runtime's container is.
type attempt struct {
	n         int32  // how many attempts came before: the restart count
	level     int    // its CrashLoopBackOff level (crashloop.Next)
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

// restarts says whether the pod's restartPolicy restarts an app container
// that exited with code: Always (also when unset, the API's default) does,
// OnFailure when it failed, Never does not.
func restarts(pod *corev1.Pod, code int32) bool {
	switch pod.Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return code != 0
	}
	return true
}

// backOff says, for app container attempt a that exited at exit and is to
// be restarted, how long it waits and the level of the next attempt.
func (a *attempt) backOff(exit time.Time) (time.Duration, int) {
	return crashloop.Next(a.level, exit.Sub(a.startedAt))
}

// nextChange says when app container attempt a next changes on its own as
// of now: it exits, or its back-off after the exit ends; ok is false when
// it runs until stopped or has exited for good.
func (a *attempt) nextChange(pod *corev1.Pod, now time.Time) (time.Time, bool) {
	exit, code, ok := exitAt(pod, a)
	switch {
	case !ok:
		return time.Time{}, false
	case now.Before(exit):
		return exit, true
	case !restarts(pod, code):
		return time.Time{}, false
	}
	delay, _ := a.backOff(exit)
	return exit.Add(delay), true
}

// exited is how attempt a of container name ended with code at exit.
func (a *attempt) exited(pod *corev1.Pod, name string, exit time.Time, code int32) *corev1.ContainerStateTerminated {
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	return &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: metav1.NewTime(a.startedAt),
		FinishedAt: metav1.NewTime(exit), ContainerID: containerID(pod, name, a.n)}
}

// advance plays app container c's crash loop up to now as the kubelet
// would have played it: each attempt that exited and is to be restarted
// waits its back-off from its exit, then the next one starts (restart
// count + 1, the exit as its lastState, from the image the container ran).
// Playing it from the times alone also rebuilds the loop of a pod adopted
// after an agent restart.
func (hp *hollowPod) advance(pod *corev1.Pod, c *corev1.Container, now time.Time) {
	for {
		a := hp.attemptOf(c)
		exit, code, ok := exitAt(pod, a)
		if !ok || now.Before(exit) || !restarts(pod, code) {
			return
		}
		delay, level := a.backOff(exit)
		resume := exit.Add(delay)
		if now.Before(resume) {
			return
		}
		hp.containers[c.Name] = &attempt{n: a.n + 1, level: level, image: a.image, startedAt: resume,
			last: a.exited(pod, c.Name, exit, code)}
	}
}

// finishedAt says whether the pod's app containers have exited for good by
// now (they are not restarted under Never, nor under OnFailure with 0),
// and when the last one did: the kubelet then stops the sidecars.
func (hp *hollowPod) finishedAt(pod *corev1.Pod, now time.Time) (time.Time, bool) {
	after, code, scripted := script(pod)
	if !scripted || restarts(pod, code) {
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
// longer the spec's, and returns them. An app container backing off starts
// from the new image at once, its back-off afresh (the kubelet keys
// back-off by the spec hash): the kubelet begins the new back-off with
// this restart, as with a first exit's, so the new attempt's exit waits
// 10s. One that exited for good stays as it ended, and so do init
// containers that are not sidecars, which completed.
func (hp *hollowPod) restartChanged(pod *corev1.Pod, now time.Time) []*corev1.Container {
	var killed []*corev1.Container
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		a := hp.attemptOf(c)
		if a.image == c.Image {
			continue
		}
		switch exit, code, ok := exitAt(pod, a); {
		case !ok || now.Before(exit):
			hp.restart(pod, c, now)
			killed = append(killed, c)
		case restarts(pod, code):
			_, level := crashloop.Next(0, 0)
			hp.containers[c.Name] = &attempt{n: a.n + 1, level: level, image: c.Image, startedAt: now, last: a.exited(pod, c.Name, exit, code)}
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

// stopSidecars returns, the first time it sees the pod's app containers
// done for good, the sidecars that their end stops (the kubelet then kills
// the pod's running containers, the last sidecar first). A hollow sidecar
// runs until then, unless the pod's status reports it exited or backing
// off (a pod adopted after an agent restart): that one is not stopped.
func (hp *hollowPod) stopSidecars(pod *corev1.Pod, now time.Time) []*corev1.Container {
	if _, finished := hp.finishedAt(pod, now); !finished || hp.sidecarsStopped {
		return nil
	}
	hp.sidecarsStopped = true
	var stopped []*corev1.Container
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		if c := &pod.Spec.InitContainers[i]; isSidecar(c) && !reportedStopped(pod, c.Name) {
			stopped = append(stopped, c)
		}
	}
	return stopped
}

// reportedStopped says whether the pod's status reports init container
// name not running (exited, or waiting to start again).
func reportedStopped(pod *corev1.Pod, name string) bool {
	for _, s := range pod.Status.InitContainerStatuses {
		if s.Name == name {
			return s.State.Running == nil
		}
	}
	return false
}

// restart ends c's running attempt as the real runtime reports a container
// it stopped with SIGTERM (a process without a handler: 143, "Error") and
// starts the next from c's image at once, its back-off afresh. The kubelet
// begins the new back-off with this restart, as with a first exit's, when
// it still has an earlier attempt that exited (it keeps the latest dead
// one); otherwise the new attempt is the first it knows.
func (hp *hollowPod) restart(pod *corev1.Pod, c *corev1.Container, now time.Time) {
	old := hp.containers[c.Name]
	level := 0
	if old.n > 0 {
		_, level = crashloop.Next(0, 0)
	}
	hp.containers[c.Name] = &attempt{
		n: old.n + 1, level: level, image: c.Image, startedAt: now,
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

// state reports every container's current attempt as of now. An app
// container that exited and waits to be restarted is reported backing off
// (CrashLoopBackOff, not ready, its exit as lastState) — unless the pod is
// stopping, which ends it as it is: exited.
func (hp *hollowPod) state(pod *corev1.Pod, now time.Time, stopping bool) agent.PodState {
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
		switch exit, code, ok := exitAt(pod, a); {
		case !ok || now.Before(exit):
			s.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(a.startedAt)}
			s.Ready, s.Started = true, new(true)
		case restarts(pod, code) && !stopping:
			delay, _ := a.backOff(exit)
			s.State.Waiting = crashloop.Waiting(pod, c.Name, delay)
			s.LastTerminationState.Terminated = a.exited(pod, c.Name, exit, code)
		default:
			s.State.Terminated = a.exited(pod, c.Name, exit, code)
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
