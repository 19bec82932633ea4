package validation

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
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
	// supportedRecursiveReadOnly in upstream's (sorted) order.
	supportedRecursiveReadOnly = []corev1.RecursiveReadOnlyMode{corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible}
)

// isNegativeErrorMsg is Kubernetes' wording for a negative quantity.
const isNegativeErrorMsg = `must be greater than or equal to 0`

// validatePodCreate holds the rules only a new pod must meet.
func validatePodCreate(pod *corev1.Pod) field.ErrorList {
	// Ephemeral (debug) containers join a running pod through their own
	// subresource; a pod never starts with them.
	if len(pod.Spec.EphemeralContainers) > 0 {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "ephemeralContainers"), "cannot be set on create")}
	}
	// A gated pod is not ready to be placed, by the scheduler or by hand.
	if pod.Spec.NodeName != "" && len(pod.Spec.SchedulingGates) != 0 {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "nodeName"), "cannot be set until all schedulingGates have been cleared")}
	}
	return validatePodDeletionCost(pod.Annotations, nil, field.NewPath("metadata", "annotations"))
}

// validateSchedulingGates: qualified names, each once.
func validateSchedulingGates(gates []corev1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, g := range gates {
		errs = append(errs, validateLabelName(g.Name, fldPath.Index(i))...)
		if seen.Has(g.Name) {
			errs = append(errs, field.Duplicate(fldPath.Index(i), g.Name))
		}
		seen.Insert(g.Name)
	}
	return errs
}

func validatePod(pod *corev1.Pod) field.ErrorList {
	specPath := field.NewPath("spec")
	errs := validatePodSpec(&pod.Spec, specPath)
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
	errs = append(errs, validateSchedulingGates(s.SchedulingGates, fldPath.Child("schedulingGates"))...)
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
	errs = append(errs, validateRuntimeClassName(s, fldPath)...)
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
	errs = append(errs, validatePodSpecLabelKeys(s, fldPath)...)
	errs = append(errs, validatePodSecurityContext(s.SecurityContext, fldPath.Child("securityContext"))...)
	errs = append(errs, validateHostUsers(s, fldPath)...)
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

// validatePodDeletionCost: the ReplicaSet controller's scale-down hint
// (controller.kubernetes.io/pod-deletion-cost) must be a 32-bit integer
// written plainly, as Kubernetes requires: no plus sign, no leading zeros.
// oldAnnotations, on update, lets a pod that was stored with a bad value
// before this rule keep it.
func validatePodDeletionCost(annotations, oldAnnotations map[string]string, fldPath *field.Path) field.ErrorList {
	value, ok := annotations[corev1.PodDeletionCost]
	if !ok || validDeletionCost(value) {
		return nil
	}
	if old, had := oldAnnotations[corev1.PodDeletionCost]; had && !validDeletionCost(old) {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath.Key(corev1.PodDeletionCost), value, "must be a 32bit integer")}
}

func validDeletionCost(value string) bool {
	if value == "" || value[0] == '+' || (value[0] == '0' && value != "0") {
		return false
	}
	_, err := strconv.ParseInt(value, 10, 32)
	return err == nil
}

// validateRuntimeClassName: set, even to "", it names a RuntimeClass, so a
// DNS subdomain, as upstream's ValidateRuntimeClassName requires (templates
// included).
func validateRuntimeClassName(s *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if s.RuntimeClassName == nil {
		return nil
	}
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(*s.RuntimeClassName, false) {
		errs = append(errs, field.Invalid(fldPath.Child("runtimeClassName"), *s.RuntimeClassName, msg))
	}
	return errs
}
