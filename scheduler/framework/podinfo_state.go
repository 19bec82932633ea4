package framework

import v1 "k8s.io/api/core/v1"

const podInfoKey StateKey = "PodInfo"

type podInfoState struct{ pi *PodInfo }

// Clone implements StateData; a PodInfo is not changed once built.
func (s *podInfoState) Clone() StateData { return s }

// WritePodInfo records pi, the parsed pod being scheduled (the queue parsed
// it when the pod arrived), so that plugins need not compute its requests
// again in every attempt.
func (c *CycleState) WritePodInfo(pi *PodInfo) { c.Write(podInfoKey, &podInfoState{pi}) }

func recordedPodInfo(state *CycleState, pod *v1.Pod) *PodInfo {
	if d, err := state.Read(podInfoKey); err == nil {
		if s, ok := d.(*podInfoState); ok && s.pi.Pod == pod {
			return s.pi
		}
	}
	return nil
}

// PodRequestsFor is PodRequests(pod), taken from the PodInfo recorded in
// state when it is pod's. The result is shared: do not modify it.
func PodRequestsFor(state *CycleState, pod *v1.Pod) *Resource {
	if pi := recordedPodInfo(state, pod); pi != nil {
		return pi.Requests
	}
	return PodRequests(pod)
}

// PodNonZeroRequestsFor is PodNonZeroRequests(pod), taken from the PodInfo
// recorded in state when it is pod's. The result is shared: do not modify it.
func PodNonZeroRequestsFor(state *CycleState, pod *v1.Pod) *Resource {
	if pi := recordedPodInfo(state, pod); pi != nil {
		return pi.NonZeroRequests
	}
	return PodNonZeroRequests(pod)
}
