package validation

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// podConditionTypes are the conditions Kubernetes itself sets; any other
// type (a readiness gate's) must be a qualified name.
var podConditionTypes = map[corev1.PodConditionType]bool{
	corev1.PodScheduled: true, corev1.PodReady: true, corev1.PodInitialized: true,
	corev1.ContainersReady: true, corev1.DisruptionTarget: true, corev1.PodReadyToStartContainers: true,
	corev1.PodResizePending: true, corev1.PodResizeInProgress: true,
}

// validatePodStatusUpdate is what Kubernetes checks of a pod's status when
// its kubelet (or a controller) writes it: well-formed conditions, a
// nominated node that can be a node's name, pod and host IPs that are IP
// addresses (one of each family at most), and no container brought back
// from termination that its restart policy keeps terminated (an ephemeral
// container is never restarted).
func validatePodStatusUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	st := field.NewPath("status")
	var errs field.ErrorList
	for i, c := range newPod.Status.Conditions {
		if !podConditionTypes[c.Type] {
			for _, msg := range validation.IsQualifiedName(string(c.Type)) {
				errs = append(errs, field.Invalid(st.Child("conditions").Index(i).Child("type"), c.Type, msg))
			}
		}
	}
	if n := newPod.Status.NominatedNodeName; n != "" && n != oldPod.Status.NominatedNodeName {
		for _, msg := range apivalidation.NameIsDNSSubdomain(n, false) {
			errs = append(errs, field.Invalid(st.Child("nominatedNodeName"), n, msg))
		}
	}
	podIPs := make([]string, len(newPod.Status.PodIPs))
	for i, ip := range newPod.Status.PodIPs {
		podIPs[i] = ip.IP
	}
	errs = append(errs, validateIPFamilies(podIPs, st.Child("podIPs"))...)
	hostIPs := make([]string, len(newPod.Status.HostIPs))
	for i, ip := range newPod.Status.HostIPs {
		hostIPs[i] = ip.IP
	}
	errs = append(errs, validateIPFamilies(hostIPs, st.Child("hostIPs"))...)
	policy := oldPod.Spec.RestartPolicy
	errs = append(errs, validateStaysTerminated(newPod.Status.ContainerStatuses, oldPod.Status.ContainerStatuses, policy, nil, st.Child("containerStatuses"))...)
	sidecars := map[string]bool{}
	for _, c := range oldPod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	errs = append(errs, validateStaysTerminated(newPod.Status.InitContainerStatuses, oldPod.Status.InitContainerStatuses, policy, sidecars, st.Child("initContainerStatuses"))...)
	return append(errs, validateStaysTerminated(newPod.Status.EphemeralContainerStatuses, oldPod.Status.EphemeralContainerStatuses,
		corev1.RestartPolicyNever, nil, st.Child("ephemeralContainerStatuses"))...)
}

// validateIPFamilies checks a status list of IPs (podIPs, hostIPs): each an
// IP address, none twice, at most one of each family.
func validateIPFamilies(ips []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	v4, v6 := 0, 0
	for i, s := range ips {
		p := path.Index(i).Child("ip")
		if e := validation.IsValidIP(p, s); len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		// As IsValidIP reads it (leading zeros allowed, for addresses
		// stored before Kubernetes stopped accepting them).
		ip := netutils.ParseIPSloppy(s)
		if seen[ip.String()] {
			errs = append(errs, field.Duplicate(p, s))
			continue
		}
		seen[ip.String()] = true
		if ip.To4() != nil {
			v4++
		} else {
			v6++
		}
	}
	if v4 > 1 || v6 > 1 {
		errs = append(errs, field.Invalid(path, ips, "may specify no more than one IP for each IP family"))
	}
	return errs
}

// validateStaysTerminated forbids a status update to bring a terminated
// container back unless the pod's restart policy restarts it (Always; a
// failed one under OnFailure) or it is a sidecar (an init container that
// restarts always).
func validateStaysTerminated(newStatuses, oldStatuses []corev1.ContainerStatus, policy corev1.RestartPolicy, sidecars map[string]bool, path *field.Path) field.ErrorList {
	if policy == corev1.RestartPolicyAlways {
		return nil
	}
	var errs field.ErrorList
	for _, old := range oldStatuses {
		t := old.State.Terminated
		if t == nil || sidecars[old.Name] || (t.ExitCode != 0 && policy == corev1.RestartPolicyOnFailure) {
			continue
		}
		for i, s := range newStatuses {
			if s.Name == old.Name && s.State.Terminated == nil {
				errs = append(errs, field.Forbidden(path.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
			}
		}
	}
	return errs
}
