package validation

import (
	"fmt"
	"math"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	supportedPortProtocols  = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}
	supportedPullPolicies   = []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}
	supportedRestartPolices = []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}
	supportedDNSPolicies    = []corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone}
	supportedTermMsgPolicy  = []corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}
	supportedHTTPSchemes    = []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}
	supportedTaintEffects   = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}
	supportedTolerationOps  = []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}
	supportedMountPropagate = []corev1.MountPropagationMode{corev1.MountPropagationNone, corev1.MountPropagationHostToContainer, corev1.MountPropagationBidirectional}
)

// isNegativeErrorMsg is Kubernetes' wording for a negative quantity.
const isNegativeErrorMsg = `must be greater than or equal to 0`

func validatePod(pod *corev1.Pod) field.ErrorList {
	specPath := field.NewPath("spec")
	errs := validatePodSpec(&pod.Spec, specPath)
	// Ephemeral containers are added through their own subresource only.
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("ephemeralContainers"), "cannot be set on create"))
	}
	// Only pods, not templates, reject padded image names: some tools use a
	// blank image in templates as a placeholder to fill in later.
	errs = append(errs, validateImageWhitespace(pod.Spec.InitContainers, specPath.Child("initContainers"))...)
	errs = append(errs, validateImageWhitespace(pod.Spec.Containers, specPath.Child("containers"))...)
	return errs
}

func validateImageWhitespace(containers []corev1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range containers {
		if strings.TrimSpace(c.Image) != c.Image {
			errs = append(errs, field.Invalid(fldPath.Index(i).Child("image"), c.Image, "must not have leading or trailing whitespace"))
		}
	}
	return errs
}

// validatePodTemplateSpec validates a template embedded in a workload.
func validatePodTemplateSpec(t *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(t.Labels, fldPath.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, fldPath.Child("annotations"))...)
	errs = append(errs, validatePodSpec(&t.Spec, fldPath.Child("spec"))...)
	if len(t.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(fldPath.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

func validatePodSpec(s *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	volumes, errs := validateVolumes(s.Volumes, fldPath.Child("volumes"))
	containerNames := sets.New[string]()
	errs = append(errs, validateInitContainers(s.InitContainers, containerNames, volumes, fldPath.Child("initContainers"))...)
	errs = append(errs, validateContainers(s.Containers, containerNames, volumes, fldPath.Child("containers"))...)
	errs = append(errs, validateRestartPolicy(s.RestartPolicy, fldPath.Child("restartPolicy"))...)
	errs = append(errs, validateDNSPolicy(s.DNSPolicy, fldPath.Child("dnsPolicy"))...)
	if s.DNSPolicy == corev1.DNSNone && s.DNSConfig == nil {
		errs = append(errs, field.Required(fldPath.Child("dnsConfig"), fmt.Sprintf("must provide `dnsConfig` when `dnsPolicy` is %s", corev1.DNSNone)))
	}
	errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, fldPath.Child("nodeSelector"))...)
	if s.NodeName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(s.NodeName, false) {
			errs = append(errs, field.Invalid(fldPath.Child("nodeName"), s.NodeName, msg))
		}
	}
	if s.ServiceAccountName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(s.ServiceAccountName, false) {
			errs = append(errs, field.Invalid(fldPath.Child("serviceAccountName"), s.ServiceAccountName, msg))
		}
	}
	if s.ActiveDeadlineSeconds != nil {
		v := *s.ActiveDeadlineSeconds
		if v < 1 || v > math.MaxInt32 {
			errs = append(errs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), v, validation.InclusiveRangeError(1, math.MaxInt32)))
		}
	}
	if s.Hostname != "" {
		errs = append(errs, dns1123Label(s.Hostname, fldPath.Child("hostname"))...)
	}
	if s.Subdomain != "" {
		errs = append(errs, dns1123Label(s.Subdomain, fldPath.Child("subdomain"))...)
	}
	if s.PriorityClassName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(s.PriorityClassName, false) {
			errs = append(errs, field.Invalid(fldPath.Child("priorityClassName"), s.PriorityClassName, msg))
		}
	}
	errs = append(errs, validateTolerations(s.Tolerations, fldPath.Child("tolerations"))...)
	for i, secret := range s.ImagePullSecrets {
		if secret.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("imagePullSecrets").Index(i).Child("name"), ""))
		}
	}
	if s.TerminationGracePeriodSeconds != nil && *s.TerminationGracePeriodSeconds < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *s.TerminationGracePeriodSeconds, isNegativeErrorMsg))
	}
	errs = append(errs, validateHostPortConflicts(s.Containers, fldPath.Child("containers"))...)
	errs = append(errs, validateHostNetworkPorts(s, fldPath)...)
	errs = append(errs, validateAffinity(s.Affinity, fldPath.Child("affinity"))...)
	errs = append(errs, validateTopologySpreadConstraints(s.TopologySpreadConstraints, fldPath.Child("topologySpreadConstraints"))...)
	errs = append(errs, validatePodSecurityContext(s.SecurityContext, fldPath.Child("securityContext"))...)
	return errs
}

func dns1123Label(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func validateRestartPolicy(p corev1.RestartPolicy, fldPath *field.Path) field.ErrorList {
	switch p {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	default:
		return field.ErrorList{field.NotSupported(fldPath, p, supportedRestartPolices)}
	}
}

func validateDNSPolicy(p corev1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	switch p {
	case corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	default:
		return field.ErrorList{field.NotSupported(fldPath, p, supportedDNSPolicies)}
	}
}

// validateVolumes returns the set of declared volume names for the mount
// checks, and the problems with the volumes themselves.
func validateVolumes(volumes []corev1.Volume, fldPath *field.Path) (sets.Set[string], field.ErrorList) {
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range volumes {
		v := &volumes[i]
		idxPath := fldPath.Index(i)
		namePath := idxPath.Child("name")
		switch {
		case v.Name == "":
			errs = append(errs, field.Required(namePath, ""))
		case names.Has(v.Name):
			errs = append(errs, field.Duplicate(namePath, v.Name))
		default:
			errs = append(errs, dns1123Label(v.Name, namePath)...)
		}
		names.Insert(v.Name)
		errs = append(errs, validateVolumeSource(&v.VolumeSource, idxPath)...)
	}
	return names, errs
}

func validateVolumeSource(src *corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	set := setVolumeSources(src)
	switch len(set) {
	case 0:
		return field.ErrorList{field.Required(fldPath, "must specify a volume type")}
	case 1:
	default:
		return field.ErrorList{field.Forbidden(fldPath.Child(set[1]), "may not specify more than 1 volume type")}
	}
	switch {
	case src.HostPath != nil:
		if src.HostPath.Path == "" {
			errs = append(errs, field.Required(fldPath.Child("hostPath", "path"), ""))
		}
	case src.ConfigMap != nil:
		if src.ConfigMap.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("configMap", "name"), ""))
		}
		errs = append(errs, validateMode(src.ConfigMap.DefaultMode, fldPath.Child("configMap", "defaultMode"))...)
		errs = append(errs, validateKeyToPaths(src.ConfigMap.Items, fldPath.Child("configMap", "items"))...)
	case src.Secret != nil:
		if src.Secret.SecretName == "" {
			errs = append(errs, field.Required(fldPath.Child("secret", "secretName"), ""))
		}
		errs = append(errs, validateMode(src.Secret.DefaultMode, fldPath.Child("secret", "defaultMode"))...)
		errs = append(errs, validateKeyToPaths(src.Secret.Items, fldPath.Child("secret", "items"))...)
	case src.PersistentVolumeClaim != nil:
		if src.PersistentVolumeClaim.ClaimName == "" {
			errs = append(errs, field.Required(fldPath.Child("persistentVolumeClaim", "claimName"), ""))
		}
	case src.EmptyDir != nil:
		if src.EmptyDir.SizeLimit != nil && src.EmptyDir.SizeLimit.Sign() < 0 {
			errs = append(errs, field.Forbidden(fldPath.Child("emptyDir", "sizeLimit"), "SizeLimit field must be a valid resource quantity"))
		}
	case src.Projected != nil:
		errs = append(errs, validateMode(src.Projected.DefaultMode, fldPath.Child("projected", "defaultMode"))...)
	case src.DownwardAPI != nil:
		errs = append(errs, validateMode(src.DownwardAPI.DefaultMode, fldPath.Child("downwardAPI", "defaultMode"))...)
	}
	return errs
}

// setVolumeSources names the sources set in src, in Kubernetes' check order.
func setVolumeSources(src *corev1.VolumeSource) []string {
	var set []string
	add := func(isSet bool, name string) {
		if isSet {
			set = append(set, name)
		}
	}
	add(src.EmptyDir != nil, "emptyDir")
	add(src.HostPath != nil, "hostPath")
	add(src.GitRepo != nil, "gitRepo")
	add(src.GCEPersistentDisk != nil, "gcePersistentDisk")
	add(src.AWSElasticBlockStore != nil, "awsElasticBlockStore")
	add(src.Secret != nil, "secret")
	add(src.NFS != nil, "nfs")
	add(src.ISCSI != nil, "iscsi")
	add(src.Glusterfs != nil, "glusterfs")
	add(src.PersistentVolumeClaim != nil, "persistentVolumeClaim")
	add(src.RBD != nil, "rbd")
	add(src.FlexVolume != nil, "flexVolume")
	add(src.Cinder != nil, "cinder")
	add(src.CephFS != nil, "cephfs")
	add(src.Flocker != nil, "flocker")
	add(src.DownwardAPI != nil, "downwardAPI")
	add(src.FC != nil, "fc")
	add(src.AzureFile != nil, "azureFile")
	add(src.ConfigMap != nil, "configMap")
	add(src.VsphereVolume != nil, "vsphereVolume")
	add(src.Quobyte != nil, "quobyte")
	add(src.AzureDisk != nil, "azureDisk")
	add(src.PhotonPersistentDisk != nil, "photonPersistentDisk")
	add(src.Projected != nil, "projected")
	add(src.PortworxVolume != nil, "portworxVolume")
	add(src.ScaleIO != nil, "scaleIO")
	add(src.StorageOS != nil, "storageos")
	add(src.CSI != nil, "csi")
	add(src.Ephemeral != nil, "ephemeral")
	add(src.Image != nil, "image")
	return set
}

func validateMode(mode *int32, fldPath *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0o777 || *mode < 0) {
		return field.ErrorList{field.Invalid(fldPath, *mode, "must be a number between 0 and 0777 (octal), both inclusive")}
	}
	return nil
}

func validateKeyToPaths(items []corev1.KeyToPath, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, kp := range items {
		p := fldPath.Index(i)
		if kp.Key == "" {
			errs = append(errs, field.Required(p.Child("key"), ""))
		}
		if kp.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		} else {
			errs = append(errs, validateLocalDescendingPath(kp.Path, p.Child("path"))...)
		}
		errs = append(errs, validateMode(kp.Mode, p.Child("mode"))...)
	}
	return errs
}

// validateLocalDescendingPath keeps file paths inside the volume: relative,
// without "..".
func validateLocalDescendingPath(p string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(p) || strings.HasPrefix(p, `\`) {
		errs = append(errs, field.Invalid(fldPath, p, "must be a relative path"))
	}
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			errs = append(errs, field.Invalid(fldPath, p, "must not contain '..'"))
			break
		}
	}
	return errs
}

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
		if from.FieldRef.FieldPath == "" {
			errs = append(errs, field.Required(fldPath.Child("fieldRef", "fieldPath"), ""))
		}
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

func validateVolumeMounts(mounts []corev1.VolumeMount, volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := sets.New[string]()
	for i, m := range mounts {
		idxPath := fldPath.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(idxPath.Child("name"), ""))
		} else if !volumes.Has(m.Name) {
			errs = append(errs, field.NotFound(idxPath.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(idxPath.Child("mountPath"), ""))
		} else if paths.Has(m.MountPath) {
			errs = append(errs, field.Invalid(idxPath.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths.Insert(m.MountPath)
		if m.SubPath != "" {
			errs = append(errs, validateLocalDescendingPath(m.SubPath, idxPath.Child("subPath"))...)
		}
		if m.MountPropagation != nil {
			switch *m.MountPropagation {
			case corev1.MountPropagationNone, corev1.MountPropagationHostToContainer, corev1.MountPropagationBidirectional:
			default:
				errs = append(errs, field.NotSupported(idxPath.Child("mountPropagation"), *m.MountPropagation, supportedMountPropagate))
			}
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

// validateProbe checks one probe; mustSucceedOnce is true for liveness and
// startup probes, whose successThreshold must be 1.
func validateProbe(p *corev1.Probe, fldPath *field.Path, mustSucceedOnce bool) field.ErrorList {
	if p == nil {
		return nil
	}
	errs := validateHandler(handlerOf(p.ProbeHandler), fldPath)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(p.InitialDelaySeconds), fldPath.Child("initialDelaySeconds"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(p.TimeoutSeconds), fldPath.Child("timeoutSeconds"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(p.PeriodSeconds), fldPath.Child("periodSeconds"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(p.SuccessThreshold), fldPath.Child("successThreshold"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(p.FailureThreshold), fldPath.Child("failureThreshold"))...)
	if p.TerminationGracePeriodSeconds != nil && *p.TerminationGracePeriodSeconds <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must be greater than 0"))
	}
	if mustSucceedOnce && p.SuccessThreshold != 1 {
		errs = append(errs, field.Invalid(fldPath.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
	}
	return errs
}

// handler is the union of probe and lifecycle handler actions.
type handler struct {
	exec      *corev1.ExecAction
	httpGet   *corev1.HTTPGetAction
	tcpSocket *corev1.TCPSocketAction
	grpc      *corev1.GRPCAction
	sleep     *corev1.SleepAction
}

func handlerOf(h corev1.ProbeHandler) handler {
	return handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, grpc: h.GRPC}
}

func validateHandler(h handler, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	check := func(set bool, name string, validate func() field.ErrorList) {
		if !set {
			return
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 handler type"))
		} else {
			errs = append(errs, validate()...)
		}
		n++
	}
	check(h.exec != nil, "exec", func() field.ErrorList {
		if len(h.exec.Command) == 0 {
			return field.ErrorList{field.Required(fldPath.Child("exec", "command"), "")}
		}
		return nil
	})
	check(h.httpGet != nil, "httpGet", func() field.ErrorList { return validateHTTPGet(h.httpGet, fldPath.Child("httpGet")) })
	check(h.tcpSocket != nil, "tcpSocket", func() field.ErrorList {
		return validatePortNumOrName(h.tcpSocket.Port, fldPath.Child("tcpSocket", "port"))
	})
	check(h.grpc != nil, "grpc", func() field.ErrorList {
		var errs field.ErrorList
		for _, msg := range validation.IsValidPortNum(int(h.grpc.Port)) {
			errs = append(errs, field.Invalid(fldPath.Child("grpc", "port"), h.grpc.Port, msg))
		}
		return errs
	})
	check(h.sleep != nil, "sleep", func() field.ErrorList {
		if h.sleep.Seconds < 0 {
			return field.ErrorList{field.Invalid(fldPath.Child("sleep", "seconds"), h.sleep.Seconds, isNegativeErrorMsg)}
		}
		return nil
	})
	if n == 0 {
		errs = append(errs, field.Required(fldPath, "must specify a handler type"))
	}
	return errs
}

func validateHTTPGet(h *corev1.HTTPGetAction, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if h.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	}
	errs = append(errs, validatePortNumOrName(h.Port, fldPath.Child("port"))...)
	switch h.Scheme {
	case corev1.URISchemeHTTP, corev1.URISchemeHTTPS:
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("scheme"), h.Scheme, supportedHTTPSchemes))
	}
	for i, hdr := range h.HTTPHeaders {
		for _, msg := range validation.IsHTTPHeaderName(hdr.Name) {
			errs = append(errs, field.Invalid(fldPath.Child("httpHeaders").Index(i).Child("name"), hdr.Name, msg))
		}
	}
	return errs
}

func validatePortNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(fldPath, port.IntValue(), msg))
		}
	case intstr.String:
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(fldPath, port.StrVal, msg))
		}
	default:
		errs = append(errs, field.InternalError(fldPath, fmt.Errorf("unknown type: %v", port.Type)))
	}
	return errs
}

func validateLifecycle(l *corev1.Lifecycle, fldPath *field.Path) field.ErrorList {
	if l == nil {
		return nil
	}
	var errs field.ErrorList
	for _, hook := range []struct {
		name string
		h    *corev1.LifecycleHandler
	}{{"postStart", l.PostStart}, {"preStop", l.PreStop}} {
		if h := hook.h; h != nil {
			errs = append(errs, validateHandler(handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, sleep: h.Sleep}, fldPath.Child(hook.name))...)
		}
	}
	return errs
}

func validateTolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		idxPath := fldPath.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, idxPath.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(idxPath.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(idxPath.Child("effect"), t.Effect,
				"effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
				errs = append(errs, field.Invalid(idxPath.Child("operator"), t.Value, strings.Join(msgs, ";")))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(idxPath.Child("operator"), t, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(idxPath.Child("operator"), t.Operator, supportedTolerationOps))
		}
		if t.Effect != "" {
			errs = append(errs, validateTaintEffect(t.Effect, idxPath.Child("effect"))...)
		}
	}
	return errs
}

func validateTaintEffect(e corev1.TaintEffect, fldPath *field.Path) field.ErrorList {
	switch e {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, e, supportedTaintEffects)}
}
