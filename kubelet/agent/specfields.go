package agent

import (
	corev1 "k8s.io/api/core/v1"
)

// fillFromSpec completes the runtime's container statuses (state, changed
// in place) with what the v1.33 kubelet takes from the pod's spec rather
// than from its runtime (convertToAPIContainerStatuses): volumeMounts, in
// every container's status (RecursiveReadOnlyMounts, GA in v1.33), the
// container's mounts, a read-only one with its recursiveReadOnly mode
// resolved against rro, whether the runtime's default handler makes
// recursively read-only mounts.
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
func fillFromSpec(spec *corev1.PodSpec, old *corev1.PodStatus, state PodState, rro bool) {
	fillContainers(spec.InitContainers, old.InitContainerStatuses, state.InitContainers, rro)
	fillContainers(spec.Containers, old.ContainerStatuses, state.Containers, rro)
}

func fillContainers(containers []corev1.Container, old, statuses []corev1.ContainerStatus, rro bool) {
	for i := range statuses {
		s := &statuses[i]
		c := containerNamed(containers, s.Name, i)
		if c == nil {
			continue
		}
		s.VolumeMounts = mountStatuses(c.VolumeMounts, findStatus(old, s.Name), rro)
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
// read-only: Enabled where ResolveRecursiveReadOnly makes it so on a
// runtime whose support is rro, Disabled otherwise (IfPossible falling
// back; Enabled unsupported, whose container does not start), as the
// kubelet reports it.
// reported, the container's status as stored, gives its mounts when they
// are already these.
func mountStatuses(mounts []corev1.VolumeMount, reported *corev1.ContainerStatus, rro bool) []corev1.VolumeMountStatus {
	if len(mounts) == 0 {
		return nil
	}
	if reported != nil && mountsReported(mounts, reported.VolumeMounts, rro) {
		return reported.VolumeMounts
	}
	out := make([]corev1.VolumeMountStatus, len(mounts))
	for i, m := range mounts {
		out[i] = corev1.VolumeMountStatus{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly}
		if m.ReadOnly {
			mode := recursiveReadOnlyStatus(m, rro)
			out[i].RecursiveReadOnly = &mode
		}
	}
	return out
}

// recursiveReadOnlyStatus is what a read-only mount's status says of it.
func recursiveReadOnlyStatus(m corev1.VolumeMount, rro bool) corev1.RecursiveReadOnlyMode {
	if on, err := ResolveRecursiveReadOnly(m, rro); err == nil && on {
		return corev1.RecursiveReadOnlyEnabled
	}
	return corev1.RecursiveReadOnlyDisabled
}

// mountsReported says whether statuses are what mountStatuses makes of
// mounts.
func mountsReported(mounts []corev1.VolumeMount, statuses []corev1.VolumeMountStatus, rro bool) bool {
	if len(statuses) != len(mounts) {
		return false
	}
	for i, m := range mounts {
		s := &statuses[i]
		if s.Name != m.Name || s.MountPath != m.MountPath || s.ReadOnly != m.ReadOnly || s.VolumeStatus != nil {
			return false
		}
		if m.ReadOnly != (s.RecursiveReadOnly != nil) || (m.ReadOnly && *s.RecursiveReadOnly != recursiveReadOnlyStatus(m, rro)) {
			return false
		}
	}
	return true
}
