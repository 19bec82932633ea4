package warnings

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// deprecatedNodeLabels are the node labels v1.33 warns about in selectors,
// affinity and topology keys, with its messages.
var deprecatedNodeLabels = map[string]string{
	`beta.kubernetes.io/arch`:                       `deprecated since v1.14; use "kubernetes.io/arch" instead`,
	`beta.kubernetes.io/os`:                         `deprecated since v1.14; use "kubernetes.io/os" instead`,
	`failure-domain.beta.kubernetes.io/region`:      `deprecated since v1.17; use "topology.kubernetes.io/region" instead`,
	`failure-domain.beta.kubernetes.io/zone`:        `deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
	`beta.kubernetes.io/instance-type`:              `deprecated since v1.17; use "node.kubernetes.io/instance-type" instead`,
	`app.kubernetes.io/created-by`:                  `deprecated since v1.9`,
	`scheduler.alpha.kubernetes.io/preferAvoidPods`: `deprecated since v1.22; use Taints and Tolerations instead`,
	`node-role.kubernetes.io/master`:                `use "node-role.kubernetes.io/control-plane" instead`,
}

// deprecatedAnnotations are pod annotations that no longer do anything, in
// the order upstream checks them.
var deprecatedAnnotations = []struct{ key, message string }{
	{`scheduler.alpha.kubernetes.io/critical-pod`, `non-functional in v1.16+; use the "priorityClassName" field instead`},
	{`security.alpha.kubernetes.io/sysctls`, `non-functional in v1.11+; use the "sysctls" field instead`},
	{`security.alpha.kubernetes.io/unsafe-sysctls`, `non-functional in v1.11+; use the "sysctls" field instead`},
}

// podSpecAndMeta returns the warnings for a pod (path nil) or a pod
// template (path to it), in upstream's order.
func podSpecAndMeta(path *field.Path, spec *corev1.PodSpec, meta *metav1.ObjectMeta) []string {
	var w []string
	specPath := path.Child("spec")

	// Deprecated node labels. The node selector is a map: its keys are
	// sorted so that the headers come in a stable order.
	for _, k := range sets.List(sets.KeySet(spec.NodeSelector)) {
		if msg, ok := deprecatedNodeLabels[k]; ok {
			w = append(w, fmt.Sprintf("%s: %s", specPath.Child("nodeSelector").Key(k), msg))
		}
	}
	if spec.Affinity != nil && spec.Affinity.NodeAffinity != nil {
		na := spec.Affinity.NodeAffinity
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			p := specPath.Child("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
			for i, term := range na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				w = append(w, nodeSelectorTerm(term, false, p.Index(i))...)
			}
		}
		// Preferred terms' values are not validated (required ones are),
		// so values no label can have are only warned about.
		p := specPath.Child("affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
		for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			w = append(w, nodeSelectorTerm(term.Preference, true, p.Index(i).Child("preference"))...)
		}
	}
	for i, c := range spec.TopologySpreadConstraints {
		p := specPath.Child("topologySpreadConstraints").Index(i)
		if msg, ok := deprecatedNodeLabels[c.TopologyKey]; ok {
			w = append(w, fmt.Sprintf("%s: %s is %s", p.Child("topologyKey"), c.TopologyKey, msg))
		}
		if c.LabelSelector == nil {
			w = append(w, nullSelector(p.Child("labelSelector")))
		}
	}

	annotations := path.Child("metadata", "annotations")
	for _, d := range deprecatedAnnotations {
		if _, ok := meta.Annotations[d.key]; ok {
			w = append(w, fmt.Sprintf("%s: %s", annotations.Key(d.key), d.message))
		}
	}

	for i, v := range spec.Volumes {
		w = append(w, volumeWarnings(specPath.Child("volumes").Index(i), &v)...)
	}

	if len(spec.HostAliases) > 1 {
		seen := sets.New[string]()
		for i, a := range spec.HostAliases {
			if seen.Has(a.IP) {
				w = append(w, fmt.Sprintf("%s: duplicate ip %q", specPath.Child("hostAliases").Index(i).Child("ip"), a.IP))
			}
			seen.Insert(a.IP)
		}
	}
	if len(spec.ImagePullSecrets) > 1 {
		seen := sets.New[string]()
		for i, s := range spec.ImagePullSecrets {
			if seen.Has(s.Name) {
				w = append(w, fmt.Sprintf("%s: duplicate name %q", specPath.Child("imagePullSecrets").Index(i).Child("name"), s.Name))
			}
			seen.Insert(s.Name)
		}
	}
	for i, s := range spec.ImagePullSecrets {
		if s.Name == "" {
			w = append(w, fmt.Sprintf("%s: invalid empty name %q", specPath.Child("imagePullSecrets").Index(i).Child("name"), s.Name))
		}
	}

	for _, r := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if v, ok := spec.Overhead[r]; ok && v.MilliValue()%1000 != 0 {
			w = append(w, fractional(specPath.Child("overhead").Key(string(r)), v.String()))
		}
	}

	// Annotations the fields replaced, set without the field: they do
	// nothing now.
	if spec.SecurityContext == nil || spec.SecurityContext.SeccompProfile == nil {
		if _, ok := meta.Annotations[corev1.SeccompPodAnnotationKey]; ok {
			w = append(w, fmt.Sprintf(`%s: non-functional in v1.27+; use the "seccompProfile" field instead`, annotations.Key(corev1.SeccompPodAnnotationKey)))
		}
	}
	podAppArmor := spec.SecurityContext != nil && spec.SecurityContext.AppArmorProfile != nil
	visitContainers(spec, specPath, func(c *corev1.Container, p *field.Path) {
		if c.SecurityContext == nil || c.SecurityContext.SeccompProfile == nil {
			key := corev1.SeccompContainerAnnotationKeyPrefix + c.Name
			if _, ok := meta.Annotations[key]; ok {
				w = append(w, fmt.Sprintf(`%s: non-functional in v1.27+; use the "seccompProfile" field instead`, annotations.Key(key)))
			}
		}
		// Pods' AppArmor annotations are warned about in
		// podAppArmorAnnotations.
		if path != nil && !podAppArmor && (c.SecurityContext == nil || c.SecurityContext.AppArmorProfile == nil) {
			key := corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + c.Name
			if _, ok := meta.Annotations[key]; ok {
				w = append(w, appArmorDeprecated(annotations.Key(key)))
			}
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
			for _, part := range []struct {
				name string
				list corev1.ResourceList
			}{{"limits", c.Resources.Limits}, {"requests", c.Resources.Requests}} {
				if v, ok := part.list[r]; ok && v.MilliValue()%1000 != 0 {
					w = append(w, fractional(p.Child("resources", part.name).Key(string(r)), v.String()))
				}
			}
		}
		w = append(w, duplicateEnv(c.Env, p.Child("env"))...)
	})

	w = append(w, portWarnings(spec, specPath)...)

	if spec.TerminationGracePeriodSeconds != nil && *spec.TerminationGracePeriodSeconds < 0 {
		w = append(w, fmt.Sprintf("%s: must be >= 0; negative values are invalid and will be treated as 1", specPath.Child("terminationGracePeriodSeconds")))
	}

	if a := spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			w = append(w, podAffinityTerms(specPath.Child("affinity", "podAffinity"),
				a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution)...)
		}
		if a.PodAntiAffinity != nil {
			w = append(w, podAffinityTerms(specPath.Child("affinity", "podAntiAffinity"),
				a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)...)
		}
	}

	if spec.DNSConfig != nil {
		for i, ns := range spec.DNSConfig.Nameservers {
			w = append(w, ipWarnings(specPath.Child("dnsConfig", "nameservers").Index(i), ns)...)
		}
	}
	for i, a := range spec.HostAliases {
		w = append(w, ipWarnings(specPath.Child("hostAliases").Index(i).Child("ip"), a.IP)...)
	}
	return w
}

// ipWarnings warns about an IP address validation accepts in a form v1.33
// announces it will refuse (leading zeros, IPv4-mapped IPv6), or about IPv6
// not in its canonical form. It is written here rather than taken from
// apimachinery's GetWarningsForIP, whose newer text calls such addresses
// invalid: here, as in v1.33, they are still accepted.
func ipWarnings(path *field.Path, value string) []string {
	ip := netutils.ParseIPSloppy(value)
	if ip == nil {
		return nil // not an address: validation refuses it
	}
	addr, err := netip.ParseAddr(value)
	if err != nil || addr.Is4In6() {
		return []string{fmt.Sprintf("%s: non-standard IP address %q will be considered invalid in a future Kubernetes release: use %q", path, value, ip.String())}
	}
	if addr.Is6() && addr.String() != value {
		return []string{fmt.Sprintf("%s: IPv6 address %q should be in RFC 5952 canonical format (%q)", path, value, addr.String())}
	}
	return nil
}

// podAffinityTerms warns about (anti-)affinity terms with a null label
// selector, which matches no pod.
func podAffinityTerms(path *field.Path, required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) []string {
	var w []string
	for i, t := range required {
		if t.LabelSelector == nil {
			w = append(w, nullSelector(path.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i).Child("labelSelector")))
		}
	}
	for i, t := range preferred {
		if t.PodAffinityTerm.LabelSelector == nil {
			w = append(w, nullSelector(path.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i).Child("podAffinityTerm", "labelSelector")))
		}
	}
	return w
}

func nullSelector(path *field.Path) string {
	return fmt.Sprintf("%s: a null labelSelector results in matching no pod", path)
}

func appArmorDeprecated(path *field.Path) string {
	return fmt.Sprintf(`%s: deprecated since v1.30; use the "appArmorProfile" field instead`, path)
}

// nodeSelectorTerm warns about deprecated label keys in a term's
// expressions and, with checkValues, about values no label can have.
func nodeSelectorTerm(term corev1.NodeSelectorTerm, checkValues bool, path *field.Path) []string {
	var w []string
	for i, e := range term.MatchExpressions {
		p := path.Child("matchExpressions").Index(i)
		if msg, ok := deprecatedNodeLabels[e.Key]; ok {
			w = append(w, fmt.Sprintf("%s: %s is %s", p.Child("key"), e.Key, msg))
		}
		if checkValues {
			for j, v := range e.Values {
				for _, msg := range labelValueProblems(v) {
					w = append(w, fmt.Sprintf("%s: %s is invalid, %s", p.Child("values").Index(j), v, msg))
				}
			}
		}
	}
	return w
}

// volumeWarnings warns about volume plugins deprecated or removed, and
// about an ephemeral volume's claim template as about a claim's.
func volumeWarnings(path *field.Path, v *corev1.Volume) []string {
	var w []string
	add := func(set bool, name, msg string) {
		if set {
			w = append(w, fmt.Sprintf("%s: %s", path.Child(name), msg))
		}
	}
	add(v.PhotonPersistentDisk != nil, "photonPersistentDisk", "deprecated in v1.11, non-functional in v1.16+")
	// The GitRepoVolumeDriver gate is off by default in v1.33, and
	// skiff's node agent has no gitRepo driver at all.
	add(v.GitRepo != nil, "gitRepo", "deprecated in v1.11, and disabled by default in v1.33+")
	add(v.ScaleIO != nil, "scaleIO", "deprecated in v1.16, non-functional in v1.22+")
	add(v.Flocker != nil, "flocker", "deprecated in v1.22, non-functional in v1.25+")
	add(v.StorageOS != nil, "storageOS", "deprecated in v1.22, non-functional in v1.25+")
	add(v.Quobyte != nil, "quobyte", "deprecated in v1.22, non-functional in v1.25+")
	add(v.Glusterfs != nil, "glusterfs", "deprecated in v1.25, non-functional in v1.26+")
	if v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil {
		w = append(w, claimSpec(path.Child("ephemeral").Child("volumeClaimTemplate").Child("spec"), &v.Ephemeral.VolumeClaimTemplate.Spec)...)
	}
	add(v.CephFS != nil, "cephfs", "deprecated in v1.28, non-functional in v1.31+")
	add(v.RBD != nil, "rbd", "deprecated in v1.28, non-functional in v1.31+")
	return w
}

// duplicateEnv warns about a variable defined again in a way that hides
// the earlier definition (which server-side apply, keyed by name, may
// drop); redefining it in terms of itself ("$(X)-suffix") is fine.
func duplicateEnv(env []corev1.EnvVar, path *field.Path) []string {
	if len(env) < 2 {
		return nil
	}
	var w []string
	seen := sets.New[string]()
	for i, e := range env {
		if !seen.Has(e.Name) {
			seen.Insert(e.Name)
			continue
		}
		ref := fmt.Sprintf("$(%s)", e.Name)
		if e.ValueFrom != nil || e.Value == ref || !strings.Contains(e.Value, ref) {
			w = append(w, fmt.Sprintf("%s: hides previous definition of %q, which may be dropped when using apply", path.Index(i), e.Name))
		}
	}
	return w
}

// portWarnings warns about container ports, across all the pod's
// containers, that repeat or shadow one another, and about repeated port
// names (services and probes use the first).
func portWarnings(spec *corev1.PodSpec, specPath *field.Path) []string {
	var w []string
	type seenPort struct {
		path *field.Path
		port corev1.ContainerPort
	}
	byNumber := map[string][]seenPort{}
	visitContainers(spec, specPath, func(c *corev1.Container, p *field.Path) {
		for i, port := range c.Ports {
			pp := p.Child("ports").Index(i)
			if port.HostIP != "" && port.HostPort == 0 {
				w = append(w, fmt.Sprintf("%s: hostIP set without hostPort: %+v", pp, port))
			}
			k := fmt.Sprintf("%d/%s", port.ContainerPort, port.Protocol)
			for _, other := range byNumber[k] {
				a, b := port.HostIP == "", other.port.HostIP == ""
				switch {
				case port.HostIP == other.port.HostIP && port.HostPort == other.port.HostPort:
					w = append(w, fmt.Sprintf("%s: duplicate port definition with %s", pp, other.path))
				case port.HostPort == 0 || other.port.HostPort == 0:
					w = append(w, fmt.Sprintf("%s: overlapping port definition with %s", pp, other.path))
				case port.HostPort == other.port.HostPort && a != b:
					w = append(w, fmt.Sprintf("%s: dangerously ambiguous port definition with %s", pp, other.path))
				}
			}
			byNumber[k] = append(byNumber[k], seenPort{pp, port})
		}
	})
	byName := map[string]*field.Path{}
	visitContainers(spec, specPath, func(c *corev1.Container, p *field.Path) {
		for i, port := range c.Ports {
			if port.Name == "" {
				continue
			}
			pp := p.Child("ports").Index(i)
			if other, ok := byName[port.Name]; ok {
				w = append(w, fmt.Sprintf("%s: duplicate port name %q with %s, services and probes that select ports by name will use %s", pp, port.Name, other, other))
			} else {
				byName[port.Name] = pp
			}
		}
	})
	return w
}

// visitContainers calls f with each init, regular and ephemeral container
// and its path, in that order.
func visitContainers(spec *corev1.PodSpec, specPath *field.Path, f func(*corev1.Container, *field.Path)) {
	for i := range spec.InitContainers {
		f(&spec.InitContainers[i], specPath.Child("initContainers").Index(i))
	}
	for i := range spec.Containers {
		f(&spec.Containers[i], specPath.Child("containers").Index(i))
	}
	for i := range spec.EphemeralContainers {
		f((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon), specPath.Child("ephemeralContainers").Index(i))
	}
}

// podAppArmorAnnotations warns, for a new pod, about each container's
// deprecated AppArmor annotation that its field does not stand for: the
// container sets no appArmorProfile and the annotation names no valid
// profile, or one other than the pod's. (Upstream copies such an
// annotation into the field as it warns; skiff does not copy it.)
// Windows pods have no AppArmor.
func podAppArmorAnnotations(pod *corev1.Pod) []string {
	if pod.Spec.OS != nil && pod.Spec.OS.Name == corev1.Windows {
		return nil
	}
	var podProfile *corev1.AppArmorProfile
	if pod.Spec.SecurityContext != nil {
		podProfile = pod.Spec.SecurityContext.AppArmorProfile
	}
	var w []string
	visitContainers(&pod.Spec, nil, func(c *corev1.Container, _ *field.Path) {
		key := corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + c.Name
		annotation, ok := pod.Annotations[key]
		if !ok || (c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil) {
			return
		}
		if p := appArmorProfileOf(annotation); p == nil || podProfile == nil || !apiequality.Semantic.DeepEqual(p, podProfile) {
			w = append(w, appArmorDeprecated(field.NewPath("metadata", "annotations").Key(key)))
		}
	})
	return w
}

// maxLocalhostProfile is the longest localhost profile name the field takes.
const maxLocalhostProfile = 4095

// appArmorProfileOf is the field an AppArmor annotation stands for, nil
// when it names no valid profile.
func appArmorProfileOf(annotation string) *corev1.AppArmorProfile {
	switch {
	case annotation == corev1.DeprecatedAppArmorBetaProfileRuntimeDefault:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
	case annotation == corev1.DeprecatedAppArmorBetaProfileNameUnconfined:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	case strings.HasPrefix(annotation, corev1.DeprecatedAppArmorBetaProfileNamePrefix):
		name := strings.TrimPrefix(annotation, corev1.DeprecatedAppArmorBetaProfileNamePrefix)
		if name == "" || strings.TrimSpace(name) != name || len(name) > maxLocalhostProfile {
			return nil
		}
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
	}
	return nil
}
