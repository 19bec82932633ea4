package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func validateInitContainers(containers []corev1.Container, names sets.Set[string], volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range containers {
		c := &containers[i]
		idxPath := fldPath.Index(i)
		errs = append(errs, validateContainer(c, names, volumes, idxPath)...)
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		if c.RestartPolicy != nil && !sidecar {
			errs = append(errs, field.NotSupported(idxPath.Child("restartPolicy"), *c.RestartPolicy, []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways}))
		}
		// Only sidecars (restartable init containers) keep running, so only
		// they can be probed; a plain init container runs to completion.
		if !sidecar {
			if c.LivenessProbe != nil {
				errs = append(errs, field.Forbidden(idxPath.Child("livenessProbe"), "may not be set for init containers without restartPolicy=Always"))
			}
			if c.ReadinessProbe != nil {
				errs = append(errs, field.Forbidden(idxPath.Child("readinessProbe"), "may not be set for init containers without restartPolicy=Always"))
			}
			if c.StartupProbe != nil {
				errs = append(errs, field.Forbidden(idxPath.Child("startupProbe"), "may not be set for init containers without restartPolicy=Always"))
			}
		}
	}
	return errs
}

func validateContainers(containers []corev1.Container, names sets.Set[string], volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	if len(containers) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	for i := range containers {
		c := &containers[i]
		idxPath := fldPath.Index(i)
		errs = append(errs, validateContainer(c, names, volumes, idxPath)...)
		if c.RestartPolicy != nil {
			errs = append(errs, field.Forbidden(idxPath.Child("restartPolicy"), "may not be set for non-init containers"))
		}
	}
	return errs
}

func validateContainer(c *corev1.Container, names sets.Set[string], volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	namePath := fldPath.Child("name")
	switch {
	case c.Name == "":
		errs = append(errs, field.Required(namePath, ""))
	case names.Has(c.Name):
		errs = append(errs, field.Duplicate(namePath, c.Name))
	default:
		errs = append(errs, dns1123Label(c.Name, namePath)...)
	}
	names.Insert(c.Name)

	if c.Image == "" {
		errs = append(errs, field.Required(fldPath.Child("image"), ""))
	}
	switch c.ImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	case "":
		errs = append(errs, field.Required(fldPath.Child("imagePullPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("imagePullPolicy"), c.ImagePullPolicy, supportedPullPolicies))
	}
	switch c.TerminationMessagePolicy {
	case corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError:
	case "":
		errs = append(errs, field.Required(fldPath.Child("terminationMessagePolicy"), "must be 'File' or 'FallbackToLogsOnError'"))
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("terminationMessagePolicy"), c.TerminationMessagePolicy, supportedTermMsgPolicy))
	}
	errs = append(errs, validateContainerPorts(c.Ports, fldPath.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, fldPath.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, fldPath.Child("envFrom"))...)
	errs = append(errs, validateVolumeMounts(c.VolumeMounts, volumes, fldPath.Child("volumeMounts"))...)
	errs = append(errs, validateResources(&c.Resources, fldPath.Child("resources"))...)
	errs = append(errs, validateProbe(c.LivenessProbe, fldPath.Child("livenessProbe"), true)...)
	errs = append(errs, validateProbe(c.ReadinessProbe, fldPath.Child("readinessProbe"), false)...)
	errs = append(errs, validateProbe(c.StartupProbe, fldPath.Child("startupProbe"), true)...)
	errs = append(errs, validateLifecycle(c.Lifecycle, fldPath.Child("lifecycle"))...)
	errs = append(errs, validateContainerSecurityContext(c.SecurityContext, fldPath.Child("securityContext"))...)
	return errs
}

func validateContainerPorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, p := range ports {
		idxPath := fldPath.Index(i)
		if p.Name != "" {
			for _, msg := range validation.IsValidPortName(p.Name) {
				errs = append(errs, field.Invalid(idxPath.Child("name"), p.Name, msg))
			}
			if msgs := validation.IsValidPortName(p.Name); len(msgs) == 0 && names.Has(p.Name) {
				errs = append(errs, field.Duplicate(idxPath.Child("name"), p.Name))
			}
			names.Insert(p.Name)
		}
		if p.ContainerPort == 0 {
			errs = append(errs, field.Required(idxPath.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(p.ContainerPort)) {
				errs = append(errs, field.Invalid(idxPath.Child("containerPort"), p.ContainerPort, msg))
			}
		}
		if p.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(p.HostPort)) {
				errs = append(errs, field.Invalid(idxPath.Child("hostPort"), p.HostPort, msg))
			}
		}
		errs = append(errs, validateProtocol(p.Protocol, idxPath.Child("protocol"))...)
	}
	return errs
}

func validateProtocol(p corev1.Protocol, fldPath *field.Path) field.ErrorList {
	switch p {
	case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	default:
		return field.ErrorList{field.NotSupported(fldPath, p, supportedPortProtocols)}
	}
}

// validateHostPortConflicts rejects two containers of one pod claiming the
// same host port and protocol: only one of them could ever bind it.
func validateHostPortConflicts(containers []corev1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for ci := range containers {
		for pi, p := range containers[ci].Ports {
			if p.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", p.Protocol, p.HostIP, p.HostPort)
			if seen.Has(key) {
				errs = append(errs, field.Duplicate(fldPath.Index(ci).Child("ports").Index(pi).Child("hostPort"), key))
			}
			seen.Insert(key)
		}
	}
	return errs
}

func validateEnv(env []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range env {
		idxPath := fldPath.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(idxPath.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				errs = append(errs, field.Invalid(idxPath.Child("name"), ev.Name, msg))
			}
		}
		errs = append(errs, validateEnvVarValueFrom(ev, idxPath.Child("valueFrom"))...)
	}
	return errs
}

func validateEnvVarValueFrom(ev corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	from := ev.ValueFrom
	if from == nil {
		return nil
	}
	var errs field.ErrorList
	n := 0
	if from.FieldRef != nil {
		n++
		errs = append(errs, validateObjectFieldSelector(from.FieldRef, envFieldPaths, fldPath.Child("fieldRef"))...)
	}
	if from.ResourceFieldRef != nil {
		n++
		if from.ResourceFieldRef.Resource == "" {
			errs = append(errs, field.Required(fldPath.Child("resourceFieldRef", "resource"), ""))
		}
	}
	if from.ConfigMapKeyRef != nil {
		n++
		errs = append(errs, validateKeySelector(from.ConfigMapKeyRef.Name, from.ConfigMapKeyRef.Key, fldPath.Child("configMapKeyRef"))...)
	}
	if from.SecretKeyRef != nil {
		n++
		errs = append(errs, validateKeySelector(from.SecretKeyRef.Name, from.SecretKeyRef.Key, fldPath.Child("secretKeyRef"))...)
	}
	if from.FileKeyRef != nil {
		n++
	}
	switch {
	case n == 0:
		errs = append(errs, field.Invalid(fldPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	case ev.Value != "":
		errs = append(errs, field.Invalid(fldPath, "", "may not be specified when `value` is not empty"))
	case n > 1:
		errs = append(errs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
	}
	return errs
}

func validateKeySelector(name, key string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	}
	if key == "" {
		errs = append(errs, field.Required(fldPath.Child("key"), ""))
	} else {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(fldPath.Child("key"), key, msg))
		}
	}
	return errs
}

func validateEnvFrom(from []corev1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ef := range from {
		idxPath := fldPath.Index(i)
		n := 0
		if ef.ConfigMapRef != nil {
			n++
			if ef.ConfigMapRef.Name == "" {
				errs = append(errs, field.Required(idxPath.Child("configMapRef", "name"), ""))
			}
		}
		if ef.SecretRef != nil {
			n++
			if ef.SecretRef.Name == "" {
				errs = append(errs, field.Required(idxPath.Child("secretRef", "name"), ""))
			}
		}
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(idxPath, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(idxPath, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

// validateResources checks names and values of requests and limits, and
// that no request exceeds its limit.
func validateResources(r *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	limPath := fldPath.Child("limits")
	reqPath := fldPath.Child("requests")
	for _, name := range sortedKeys(r.Limits) {
		q := r.Limits[name]
		p := limPath.Key(string(name))
		errs = append(errs, validateContainerResourceName(name, p)...)
		errs = append(errs, validateQuantity(q, p)...)
	}
	for _, name := range sortedKeys(r.Requests) {
		q := r.Requests[name]
		p := reqPath.Key(string(name))
		errs = append(errs, validateContainerResourceName(name, p)...)
		errs = append(errs, validateQuantity(q, p)...)
		limit, hasLimit := r.Limits[name]
		if hasLimit && q.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(p, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
		// Extended resources (GPUs and the like) cannot be overcommitted.
		if isExtendedResource(name) {
			if !hasLimit {
				errs = append(errs, field.Forbidden(limPath, "Limit must be set for non overcommitable resources"))
			} else if q.Cmp(limit) != 0 {
				errs = append(errs, field.Invalid(p, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
			}
		}
	}
	return errs
}

func validateQuantity(q resource.Quantity, fldPath *field.Path) field.ErrorList {
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(fldPath, q.String(), isNegativeErrorMsg)}
	}
	return nil
}

func isExtendedResource(name corev1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") {
		return false
	}
	return !strings.HasPrefix(s, "kubernetes.io/") && !strings.Contains(strings.SplitN(s, "/", 2)[0], ".kubernetes.io") &&
		!strings.HasPrefix(s, corev1.ResourceRequestsHugePagesPrefix)
}

// validateContainerResourceName accepts what a container may ask for: cpu,
// memory, ephemeral-storage, hugepages-<size> and domain-qualified extended
// resources.
func validateContainerResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	s := string(name)
	if msgs := validation.IsQualifiedName(s); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(fldPath, s, strings.Join(msgs, "; "))}
	}
	switch {
	case name == corev1.ResourceCPU, name == corev1.ResourceMemory, name == corev1.ResourceEphemeralStorage,
		strings.HasPrefix(s, corev1.ResourceHugePagesPrefix):
		return nil
	case strings.Contains(s, "/") && !strings.HasPrefix(s, "kubernetes.io/"):
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, s, "must be a standard resource for containers")}
}
