package agent

import (
	corev1 "k8s.io/api/core/v1"
)

// fillFromSpec completes the runtime's container statuses (state, changed
// in place) with what the v1.33 kubelet takes from the pod's spec rather
// than from its runtime (convertToAPIContainerStatuses): volumeMounts, in
// every container's status (RecursiveReadOnlyMounts, GA in v1.33), the
// container's mounts, a read-only one with its recursiveReadOnly mode
// resolved.
//
// The v1.33 kubelet also writes resources and allocatedResources, but only
// under InPlacePodVerticalScaling, which skiff does not implement: its API
// serves no pods/resize and refuses changes to a container's resources, as
// a v1.33 API server with that gate off; its nodes write what a kubelet
// with the gate off writes, which is neither. (Written, they would be the
// spec's again, and cost about a kilobyte per pod in every decoded copy:
// some 11 MB more heap for the server with 10,000 pods.)
//
// The kubelet writes user (SupplementalGroupsPolicy, beta and on in v1.33)
// only as the runtime reports it; skiff's runtimes report none (nor does
// its Node claim the supplementalGroupsPolicy feature, as with containerd
// before 2.0), so it stays unset, as the kubelet leaves it.
//
// old is the pod's status as stored: mounts already reported are reused
// rather than built again, so that a resync allocates nothing for them.
func fillFromSpec(spec *corev1.PodSpec, old *corev1.PodStatus, state PodState) {
	fillContainers(spec.InitContainers, old.InitContainerStatuses, state.InitContainers)
	fillContainers(spec.Containers, old.ContainerStatuses, state.Containers)
}

func fillContainers(containers []corev1.Container, old, statuses []corev1.ContainerStatus) {
	for i := range statuses {
		s := &statuses[i]
		c := containerNamed(containers, s.Name, i)
		if c == nil {
			continue
		}
		s.VolumeMounts = mountStatuses(c.VolumeMounts, findStatus(old, s.Name))
	}
}

// containerNamed finds the container called name, looking first at index
// i, where the runtimes put its status.
func containerNamed(containers []corev1.Container, name string, i int) *corev1.Container {
	if i < len(containers) && containers[i].Name == name {
		return &containers[i]
	}
	for j := range containers {
		if containers[j].Name == name {
			return &containers[j]
		}
	}
	return nil
}

// mountStatuses is the status of a container's mounts: each one's name,
// path and readOnly, and for a read-only one whether it is recursively
// read-only. Skiff's runtimes make plain read-only bind mounts (what is
// mounted below one stays writable), as a runtime handler that does not
// support recursive read-only mounts, for which the kubelet reports
// Disabled whatever the mount asked (IfPossible falls back to it).
// reported, the container's status as stored, gives its mounts when they
// are already these.
func mountStatuses(mounts []corev1.VolumeMount, reported *corev1.ContainerStatus) []corev1.VolumeMountStatus {
	if len(mounts) == 0 {
		return nil
	}
	if reported != nil && mountsReported(mounts, reported.VolumeMounts) {
		return reported.VolumeMounts
	}
	disabled := corev1.RecursiveReadOnlyDisabled
	out := make([]corev1.VolumeMountStatus, len(mounts))
	for i, m := range mounts {
		out[i] = corev1.VolumeMountStatus{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly}
		if m.ReadOnly {
			out[i].RecursiveReadOnly = &disabled
		}
	}
	return out
}

// mountsReported says whether statuses are what mountStatuses makes of
// mounts.
func mountsReported(mounts []corev1.VolumeMount, statuses []corev1.VolumeMountStatus) bool {
	if len(statuses) != len(mounts) {
		return false
	}
	for i, m := range mounts {
		s := &statuses[i]
		if s.Name != m.Name || s.MountPath != m.MountPath || s.ReadOnly != m.ReadOnly || s.VolumeStatus != nil {
			return false
		}
		if m.ReadOnly != (s.RecursiveReadOnly != nil) || (m.ReadOnly && *s.RecursiveReadOnly != corev1.RecursiveReadOnlyDisabled) {
			return false
		}
	}
	return true
}
