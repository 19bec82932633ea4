package agent

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"

	"github.com/skiffkube/skiff/apiserver/qos"
)

// computeStatus derives a pod's status from what the runtime reports, as the
// kubelet does: phase from the containers' states and the restart policy,
// the standard conditions, the addresses, and what each container's status
// takes from the spec (fillFromSpec; rro: the runtime makes recursively
// read-only mounts).
func computeStatus(pod *corev1.Pod, state PodState, podIP, hostIP string, now time.Time, rro bool) *corev1.PodStatus {
	old := &pod.Status
	fillFromSpec(&pod.Spec, old, state, rro)
	st := &corev1.PodStatus{
		HostIP:                hostIP,
		PodIP:                 podIP,
		InitContainerStatuses: state.InitContainers,
		ContainerStatuses:     state.Containers,
		QOSClass:              qos.Of(pod),
		StartTime:             old.StartTime,
		NominatedNodeName:     old.NominatedNodeName,
	}
	if hostIP != "" {
		st.HostIPs = []corev1.HostIP{{IP: hostIP}}
	}
	if podIP != "" {
		st.PodIPs = []corev1.PodIP{{IP: podIP}}
	}
	if st.StartTime == nil {
		t := metav1.NewTime(now)
		st.StartTime = &t
	}
	initReadiness(pod, state.InitContainers)
	// Once an app container has run, the pod stays initialized while a
	// sidecar restarts, as on Kubernetes: it is not sent back to Pending.
	initialized := initDone(pod, state.InitContainers) || anyStarted(state.Containers)
	st.Phase = phase(pod, state, initialized)
	if st.Phase == old.Phase {
		// The reason and message go with the phase, as the kubelet keeps them.
		st.Reason, st.Message = old.Reason, old.Message
	}

	containersReady := containersReadyCondition(pod, state, st.Phase)
	// The kubelet's own conditions, in its order (kubectl describe lists
	// them so), after those others own. PodScheduled is the kubelet's too:
	// a pod it runs was scheduled, even one bound without the scheduler.
	conds := []corev1.PodCondition{
		{Type: corev1.PodReadyToStartContainers, Status: boolStatus(podIP != "")},
		initializedCondition(pod, state, st.Phase, initialized),
		readyCondition(pod, old.Conditions, containersReady),
		containersReady,
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
	}
	// Keep conditions others own (readiness gates, DisruptionTarget…), first.
	st.Conditions = make([]corev1.PodCondition, 0, len(old.Conditions)+len(conds))
	for _, c := range old.Conditions {
		if !slices.ContainsFunc(conds, func(m corev1.PodCondition) bool { return m.Type == c.Type }) {
			st.Conditions = append(st.Conditions, c)
		}
	}
	for _, c := range conds {
		c.LastTransitionTime = metav1.NewTime(now)
		for _, o := range old.Conditions {
			if o.Type == c.Type && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
		st.Conditions = append(st.Conditions, c)
	}
	return st
}

// The reasons of the kubelet's pod conditions (Kubernetes' pkg/kubelet/status).
const (
	reasonUnknownStatuses = "UnknownContainerStatuses"
	reasonPodCompleted    = "PodCompleted"
	reasonPodFailed       = "PodFailed"
	reasonNotReady        = "ContainersNotReady"
	reasonNotInitialized  = "ContainersNotInitialized"
	reasonGatesNotReady   = "ReadinessGatesNotReady"
	msgUnknownStatus      = "containers with unknown status: %s"
	msgUnreadyStatus      = "containers with unready status: %s"
	msgIncompleteStatus   = "containers with incomplete status: %s"
	msgGateMissing        = "corresponding condition of pod readiness gate %q does not exist."
	msgGateNotTrue        = "the status of pod readiness gate %q is not \"True\", but %v"
	listSeparator         = ", "
)

// containersReadyCondition is ContainersReady as the kubelet words it: True
// when every app container and every sidecar (restartable init container)
// is ready; else False, ContainersNotReady, naming the containers ("containers
// with unready status: [a b]"); PodCompleted or PodFailed once the pod
// finished.
func containersReadyCondition(pod *corev1.Pod, state PodState, phase corev1.PodPhase) corev1.PodCondition {
	c := corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse}
	if len(state.InitContainers)+len(state.Containers) == 0 {
		c.Reason = reasonUnknownStatuses
		return c
	}
	var unknown, unready []string
	check := func(name string) {
		switch s := state.find(name); {
		case s == nil:
			unknown = append(unknown, name)
		case !s.Ready:
			unready = append(unready, name)
		}
	}
	for i := range pod.Spec.InitContainers {
		if restartable(&pod.Spec.InitContainers[i]) {
			check(pod.Spec.InitContainers[i].Name)
		}
	}
	for i := range pod.Spec.Containers {
		check(pod.Spec.Containers[i].Name)
	}
	switch {
	case phase == corev1.PodSucceeded && len(unknown) == 0:
		c.Reason = reasonPodCompleted
		return c
	case phase == corev1.PodFailed:
		c.Reason = reasonPodFailed
		return c
	}
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf(msgUnknownStatus, unknown))
	}
	if len(unready) > 0 {
		msgs = append(msgs, fmt.Sprintf(msgUnreadyStatus, unready))
	}
	if len(msgs) > 0 {
		c.Reason, c.Message = reasonNotReady, strings.Join(msgs, listSeparator)
		return c
	}
	c.Status = corev1.ConditionTrue
	return c
}

// readyCondition is the pod's Ready condition: ContainersReady's verdict
// while that is not True, then the readiness gates' (ReadinessGatesNotReady,
// saying which gate is missing or not True; conds are the pod's current
// conditions, where others set the gates').
func readyCondition(pod *corev1.Pod, conds []corev1.PodCondition, containersReady corev1.PodCondition) corev1.PodCondition {
	c := corev1.PodCondition{Type: corev1.PodReady, Status: containersReady.Status, Reason: containersReady.Reason, Message: containersReady.Message}
	if c.Status != corev1.ConditionTrue {
		return c
	}
	var msgs []string
	for _, g := range pod.Spec.ReadinessGates {
		i := slices.IndexFunc(conds, func(c corev1.PodCondition) bool { return c.Type == g.ConditionType })
		switch {
		case i < 0:
			msgs = append(msgs, fmt.Sprintf(msgGateMissing, string(g.ConditionType)))
		case conds[i].Status != corev1.ConditionTrue:
			msgs = append(msgs, fmt.Sprintf(msgGateNotTrue, string(g.ConditionType), conds[i].Status))
		}
	}
	if len(msgs) > 0 {
		c.Status, c.Reason, c.Message = corev1.ConditionFalse, reasonGatesNotReady, strings.Join(msgs, listSeparator)
	}
	return c
}

// initializedCondition is the pod's Initialized condition: True once every
// init container completed (a sidecar: started), with reason PodCompleted
// when the pod succeeded; else False, ContainersNotInitialized, naming the
// init containers not done ("containers with incomplete status: [a]").
func initializedCondition(pod *corev1.Pod, state PodState, phase corev1.PodPhase, initialized bool) corev1.PodCondition {
	c := corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}
	if len(state.InitContainers)+len(state.Containers) == 0 && len(pod.Spec.InitContainers) > 0 {
		c.Status, c.Reason = corev1.ConditionFalse, reasonUnknownStatuses
		return c
	}
	var unknown, incomplete []string
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		switch s := state.find(ic.Name); {
		case s == nil:
			unknown = append(unknown, ic.Name)
		case !initContainerDone(ic, s):
			incomplete = append(incomplete, ic.Name)
		}
	}
	if phase == corev1.PodSucceeded && len(unknown) == 0 {
		c.Reason = reasonPodCompleted
		return c
	}
	if initialized {
		return c
	}
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf(msgUnknownStatus, unknown))
	}
	if len(incomplete) > 0 {
		msgs = append(msgs, fmt.Sprintf(msgIncompleteStatus, incomplete))
	}
	c.Status, c.Reason, c.Message = corev1.ConditionFalse, reasonNotInitialized, strings.Join(msgs, listSeparator)
	return c
}

// find returns the status of the init or app container called name, nil if
// the runtime reported none.
func (s PodState) find(name string) *corev1.ContainerStatus {
	if c := findStatus(s.InitContainers, name); c != nil {
		return c
	}
	return findStatus(s.Containers, name)
}

// initDone says whether every init container is done (initContainerDone).
func initDone(pod *corev1.Pod, statuses []corev1.ContainerStatus) bool {
	for i := range pod.Spec.InitContainers {
		s := findStatus(statuses, pod.Spec.InitContainers[i].Name)
		if s == nil || !initContainerDone(&pod.Spec.InitContainers[i], s) {
			return false
		}
	}
	return true
}

// initContainerDone says whether an init container has let the pod go on:
// a sidecar once started, any other once it exited with 0.
func initContainerDone(c *corev1.Container, s *corev1.ContainerStatus) bool {
	if restartable(c) {
		return s.Started != nil && *s.Started
	}
	return s.State.Terminated != nil && s.State.Terminated.ExitCode == 0
}

// initReadiness sets the readiness of the init containers that are not
// sidecars as the kubelet's prober reports it: ready once exited with 0, not
// while running (a sidecar's readiness is its readiness probe's, as an app
// container's).
func initReadiness(pod *corev1.Pod, statuses []corev1.ContainerStatus) {
	for i := range statuses {
		s := &statuses[i]
		j := slices.IndexFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == s.Name })
		if j >= 0 && !restartable(&pod.Spec.InitContainers[j]) {
			s.Ready = s.State.Terminated != nil && s.State.Terminated.ExitCode == 0
		}
	}
}

// anyStarted says whether one of the app containers has run (is running,
// has exited, or waits to restart after an exit), which proves the init
// containers were done.
func anyStarted(statuses []corev1.ContainerStatus) bool {
	return slices.ContainsFunc(statuses, func(s corev1.ContainerStatus) bool {
		return s.State.Running != nil || s.State.Terminated != nil || s.LastTerminationState.Terminated != nil
	})
}

// restartable says whether an init container is a sidecar (restartPolicy Always).
func restartable(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func phase(pod *corev1.Pod, state PodState, initialized bool) corev1.PodPhase {
	policy := pod.Spec.RestartPolicy
	// A failed init container fails the pod under Never; a sidecar's exit
	// never does (it is restarted, or stopped once the app containers are
	// done), as the kubelet's getPhase leaves restartable init containers
	// out.
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if restartable(c) || policy != corev1.RestartPolicyNever {
			continue
		}
		if s := findStatus(state.InitContainers, c.Name); s != nil && s.State.Terminated != nil && s.State.Terminated.ExitCode != 0 {
			return corev1.PodFailed
		}
	}
	if !initialized {
		return corev1.PodPending
	}
	// As the kubelet's getPhase: a container that has not started yet
	// (waiting, with no exit before) keeps the pod Pending even while
	// others run; one waiting to restart after an exit counts as stopped.
	running, waiting, stopped, succeeded := 0, 0, 0, 0
	for _, s := range state.Containers {
		switch {
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil:
			stopped++
			if s.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case s.LastTerminationState.Terminated != nil:
			stopped++
		default:
			waiting++
		}
	}
	switch {
	case len(state.Containers) < len(pod.Spec.Containers), waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped == 0:
		return corev1.PodPending
	case policy == corev1.RestartPolicyAlways || policy == "":
		return corev1.PodRunning // every container is restarting
	case stopped == succeeded:
		return corev1.PodSucceeded
	case policy == corev1.RestartPolicyNever:
		return corev1.PodFailed
	}
	return corev1.PodRunning // OnFailure: the failed ones restart
}

func boolStatus(b bool) corev1.ConditionStatus {
	if b {
		return corev1.ConditionTrue
	}
	return corev1.ConditionFalse
}

// statusEqual says whether writing b over a would change the stored pod. The
// API keeps times to the second (RFC 3339), so times are compared at that
// precision, as the kubelet's status manager normalizes them: a
// container's start time read from the runtime carries nanoseconds, and
// comparing those made every periodic sync of every running pod write an
// unchanged status (50 writes a second with 100 pods). The comparison
// itself truncates, rather than comparing truncated deep copies: every
// sync of every pod makes it (a thousand hollow nodes' worth of copies was
// a fifth of the agent's status work).
func statusEqual(a, b *corev1.PodStatus) bool {
	return storedEqualities.DeepEqual(a, b)
}

// storedEqualities are equality.Semantic's, with times equal when they
// are in the same second (what the API stores of a metav1.Time).
var storedEqualities = func() conversion.Equalities {
	e := conversion.EqualitiesOrDie(func(a, b metav1.Time) bool { return a.Unix() == b.Unix() })
	for t, f := range equality.Semantic.Equalities {
		if _, ok := e.Equalities[t]; !ok {
			e.Equalities[t] = f
		}
	}
	return e
}()
