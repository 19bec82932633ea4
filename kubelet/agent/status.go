package agent

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"

	"github.com/skiffkube/skiff/apiserver/qos"
)

// computeStatus derives a pod's status from what the runtime reports, as the
// kubelet does: phase from the containers' states and the restart policy,
// the standard conditions, and the addresses.
func computeStatus(pod *corev1.Pod, state PodState, podIP, hostIP string, now time.Time) *corev1.PodStatus {
	old := &pod.Status
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
	initialized := initDone(pod, state.InitContainers)
	st.Phase = phase(pod, state, initialized)

	containersReady := len(state.Containers) == len(pod.Spec.Containers) && len(state.Containers) > 0
	for _, c := range state.Containers {
		containersReady = containersReady && c.Ready
	}
	ready := containersReady && st.Phase == corev1.PodRunning
	for _, g := range pod.Spec.ReadinessGates {
		ready = ready && conditionTrue(old.Conditions, g.ConditionType)
	}
	reason := func(ok bool, r string) string {
		if ok {
			return ""
		}
		if st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed {
			return "PodCompleted"
		}
		return r
	}
	conds := []corev1.PodCondition{
		{Type: corev1.PodReadyToStartContainers, Status: boolStatus(podIP != "")},
		{Type: corev1.PodInitialized, Status: boolStatus(initialized), Reason: reason(initialized, "ContainersNotInitialized")},
		{Type: corev1.ContainersReady, Status: boolStatus(containersReady), Reason: reason(containersReady, "ContainersNotReady")},
		{Type: corev1.PodReady, Status: boolStatus(ready), Reason: reason(ready, "ContainersNotReady")},
	}
	// Keep conditions others own (PodScheduled, readiness gates, DisruptionTarget…).
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

func initDone(pod *corev1.Pod, statuses []corev1.ContainerStatus) bool {
	done := 0
	for _, s := range statuses {
		if t := s.State.Terminated; t != nil && t.ExitCode == 0 {
			done++
		} else if s.State.Running != nil && isSidecar(pod, s.Name) && s.Started != nil && *s.Started {
			done++ // a restartable init container counts once started
		}
	}
	return done == len(pod.Spec.InitContainers)
}

func isSidecar(pod *corev1.Pod, name string) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		}
	}
	return false
}

func phase(pod *corev1.Pod, state PodState, initialized bool) corev1.PodPhase {
	policy := pod.Spec.RestartPolicy
	for _, s := range state.InitContainers {
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 && policy == corev1.RestartPolicyNever {
			return corev1.PodFailed
		}
	}
	if !initialized {
		return corev1.PodPending
	}
	running, succeeded, failed, waiting := 0, 0, 0, 0
	for _, s := range state.Containers {
		switch {
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil && s.State.Terminated.ExitCode == 0:
			succeeded++
		case s.State.Terminated != nil:
			failed++
		default:
			waiting++
			if s.LastTerminationState.Terminated != nil {
				running++ // restarting after an exit: the pod keeps running
			}
		}
	}
	switch {
	case len(state.Containers) < len(pod.Spec.Containers):
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case waiting > 0:
		return corev1.PodPending
	case failed > 0 && policy == corev1.RestartPolicyNever:
		return corev1.PodFailed
	case failed == 0 && policy != corev1.RestartPolicyAlways:
		return corev1.PodSucceeded
	}
	return corev1.PodRunning // terminated containers that will be restarted
}

func boolStatus(b bool) corev1.ConditionStatus {
	if b {
		return corev1.ConditionTrue
	}
	return corev1.ConditionFalse
}

func conditionTrue(conds []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
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
