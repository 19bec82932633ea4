package validation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// supportedProcMounts in upstream's order.
var supportedProcMounts = []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}

// hostUsersForbidden is v1.33's message for a host namespace a pod in its
// own user namespace may not share.
const hostUsersForbidden = "when `pod.Spec.HostUsers` is false"

// validateHostUsers judges spec.hostUsers as v1.33's ValidatePodSpec does.
// A pod in a user namespace of its own (hostUsers: false) may not share
// the host's network, PID or IPC namespace: Kubernetes refuses the mix
// (permission surprises, no known use). The paths are upstream's, HostPID
// and HostIPC capitalized as there. And since an Unmasked /proc is safe
// only inside a user namespace, a container may ask for one only in such
// a pod (upstream's ValidateSecurityContext). Volumes are not restricted:
// v1.33 lets a pod in a user namespace mount any kind.
func validateHostUsers(s *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	// The default is the host's user namespace.
	hostUsers := s.HostUsers == nil || *s.HostUsers
	var errs field.ErrorList
	if !hostUsers {
		if s.HostNetwork {
			errs = append(errs, field.Forbidden(fldPath.Child("hostNetwork"), hostUsersForbidden))
		}
		if s.HostPID {
			errs = append(errs, field.Forbidden(fldPath.Child("HostPID"), hostUsersForbidden))
		}
		if s.HostIPC {
			errs = append(errs, field.Forbidden(fldPath.Child("HostIPC"), hostUsersForbidden))
		}
		return errs
	}
	unmasked := func(containers []corev1.Container, p *field.Path) {
		for i, c := range containers {
			if sc := c.SecurityContext; sc != nil && sc.ProcMount != nil && *sc.ProcMount == corev1.UnmaskedProcMount {
				errs = append(errs, field.Invalid(p.Index(i).Child("securityContext", "procMount"), *sc.ProcMount,
					"`hostUsers` must be false to use `Unmasked`"))
			}
		}
	}
	unmasked(s.Containers, fldPath.Child("containers"))
	unmasked(s.InitContainers, fldPath.Child("initContainers"))
	return errs
}

// validateProcMount: Default or Unmasked.
func validateProcMount(t *corev1.ProcMountType, fldPath *field.Path) field.ErrorList {
	if t == nil || *t == corev1.DefaultProcMount || *t == corev1.UnmaskedProcMount {
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, *t, supportedProcMounts)}
}

// validateSpecProcMounts is validateProcMount over the spec's containers,
// with the paths validateContainer gives its errors.
func validateSpecProcMounts(s *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	eachContainer(s, fldPath, func(c *corev1.Container, p *field.Path) {
		if c.SecurityContext != nil {
			errs = append(errs, validateProcMount(c.SecurityContext.ProcMount, p.Child("securityContext", "procMount"))...)
		}
	})
	return errs
}

// eachContainer calls f with each init and app container of s and its path.
func eachContainer(s *corev1.PodSpec, fldPath *field.Path, f func(*corev1.Container, *field.Path)) {
	for i := range s.InitContainers {
		f(&s.InitContainers[i], fldPath.Child("initContainers").Index(i))
	}
	for i := range s.Containers {
		f(&s.Containers[i], fldPath.Child("containers").Index(i))
	}
}
