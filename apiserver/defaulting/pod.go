package defaulting

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skiffkube/skiff/apiserver/qos"
)

// Values Kubernetes uses; named so tests and readers can find them.
const (
	DefaultTerminationGracePeriodSeconds int64 = 30
	DefaultSchedulerName                       = corev1.DefaultSchedulerName
	DefaultTerminationMessagePath              = corev1.TerminationMessagePathDefault
	DefaultVolumeMode                    int32 = corev1.SecretVolumeSourceDefaultMode // 0644
	DefaultTokenExpirationSeconds        int64 = 3600
)

// defaultPod applies the pod-only defaults (those Kubernetes does not apply to
// pod templates) and then the shared pod spec defaults.
func defaultPod(pod *corev1.Pod) {
	// Requests default to limits only on Pods, never on templates: a template's
	// missing request may still be filled by a LimitRange at pod creation.
	for i := range pod.Spec.Containers {
		defaultRequestsFromLimits(&pod.Spec.Containers[i].Resources)
	}
	for i := range pod.Spec.InitContainers {
		defaultRequestsFromLimits(&pod.Spec.InitContainers[i].Resources)
	}
	if pod.Spec.Resources != nil {
		defaultRequestsFromLimits(pod.Spec.Resources)
	}
	if pod.Spec.EnableServiceLinks == nil {
		pod.Spec.EnableServiceLinks = ptrTo(corev1.DefaultEnableServiceLinks)
	}
	if pod.Spec.HostNetwork {
		defaultHostNetworkPorts(pod.Spec.Containers)
		defaultHostNetworkPorts(pod.Spec.InitContainers)
	}
	defaultPodSpec(&pod.Spec)
	// A status written without the class (by a kubelet that drops it)
	// keeps the one its spec gives; a create records it after admission.
	if pod.Status.QOSClass == "" {
		pod.Status.QOSClass = qos.Class(pod)
	}
	pairStatusIPs(&pod.Status)
}

// pairStatusIPs makes status.podIP the first of status.podIPs and hostIP
// the first of hostIPs, as Kubernetes' conversion of v1 pods does on every
// write, so readers of either field agree: a list written alone names the
// singular field, and a singular field written alone, or differing from
// its list's first address, becomes the whole list (it wins, as written
// by the older kubelets that know only it).
func pairStatusIPs(st *corev1.PodStatus) {
	if st.PodIP != "" && (len(st.PodIPs) == 0 || st.PodIPs[0].IP != st.PodIP) {
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	}
	if st.PodIP == "" && len(st.PodIPs) > 0 {
		st.PodIP = st.PodIPs[0].IP
	}
	if st.HostIP != "" && (len(st.HostIPs) == 0 || st.HostIPs[0].IP != st.HostIP) {
		st.HostIPs = []corev1.HostIP{{IP: st.HostIP}}
	}
	if st.HostIP == "" && len(st.HostIPs) > 0 {
		st.HostIP = st.HostIPs[0].IP
	}
}

func defaultRequestsFromLimits(r *corev1.ResourceRequirements) {
	if len(r.Limits) == 0 {
		return
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = limit.DeepCopy()
		}
	}
}

// defaultHostNetworkPorts mirrors Kubernetes: with host networking a
// container port is also a host port.
func defaultHostNetworkPorts(containers []corev1.Container) {
	for i := range containers {
		for j := range containers[i].Ports {
			if containers[i].Ports[j].HostPort == 0 {
				containers[i].Ports[j].HostPort = containers[i].Ports[j].ContainerPort
			}
		}
	}
}

// defaultPodTemplateSpec applies the defaults every pod template receives
// wherever it is embedded (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job,
// CronJob, PodTemplate, ReplicationController).
func defaultPodTemplateSpec(t *corev1.PodTemplateSpec) {
	defaultPodSpec(&t.Spec)
}

func defaultPodSpec(s *corev1.PodSpec) {
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptrTo(DefaultTerminationGracePeriodSeconds)
	}
	if s.SchedulerName == "" {
		s.SchedulerName = DefaultSchedulerName
	}
	for i := range s.Volumes {
		defaultVolume(&s.Volumes[i])
	}
	for i := range s.InitContainers {
		defaultContainer(&s.InitContainers[i])
	}
	for i := range s.Containers {
		defaultContainer(&s.Containers[i])
	}
	for i := range s.EphemeralContainers {
		defaultEphemeralContainer(&s.EphemeralContainers[i].EphemeralContainerCommon)
	}
	defaultResourceList(s.Overhead)
	if s.Resources != nil {
		defaultResourceList(s.Resources.Limits)
		defaultResourceList(s.Resources.Requests)
	}
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicyFor(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = DefaultTerminationMessagePath
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	defaultEnv(c.Env)
	defaultResourceList(c.Resources.Limits)
	defaultResourceList(c.Resources.Requests)
	defaultProbe(c.LivenessProbe)
	defaultProbe(c.ReadinessProbe)
	defaultProbe(c.StartupProbe)
	defaultLifecycle(c.Lifecycle)
}

// defaultEphemeralContainer gives debug containers the same per-container
// defaults as ordinary ones.
func defaultEphemeralContainer(c *corev1.EphemeralContainerCommon) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicyFor(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = DefaultTerminationMessagePath
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	defaultEnv(c.Env)
	defaultResourceList(c.Resources.Limits)
	defaultResourceList(c.Resources.Requests)
}

// pullPolicyFor follows Kubernetes: an image pinned by digest or by a tag
// other than "latest" is pulled only if not present; an untagged or :latest
// image is always pulled, because its content may change under the same name.
func pullPolicyFor(image string) corev1.PullPolicy {
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent
	}
	// The tag is after the last ':' that follows the last '/'; a ':' before
	// the last '/' is a registry port (registry:5000/app).
	name := image
	if slash := strings.LastIndex(name, "/"); slash >= 0 {
		name = name[slash+1:]
	}
	colon := strings.LastIndex(name, ":")
	if colon < 0 {
		return corev1.PullAlways
	}
	if name[colon+1:] == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

func defaultEnv(env []corev1.EnvVar) {
	for i := range env {
		if env[i].ValueFrom != nil && env[i].ValueFrom.FieldRef != nil && env[i].ValueFrom.FieldRef.APIVersion == "" {
			env[i].ValueFrom.FieldRef.APIVersion = "v1"
		}
	}
}

func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	defaultHTTPGet(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptrTo("")
	}
}

func defaultLifecycle(l *corev1.Lifecycle) {
	if l == nil {
		return
	}
	if l.PostStart != nil {
		defaultHTTPGet(l.PostStart.HTTPGet)
	}
	if l.PreStop != nil {
		defaultHTTPGet(l.PreStop.HTTPGet)
	}
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func defaultVolume(v *corev1.Volume) {
	src := &v.VolumeSource
	// A volume with no source at all is an emptyDir, as in Kubernetes.
	if *src == (corev1.VolumeSource{}) {
		src.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	switch {
	case src.Secret != nil:
		if src.Secret.DefaultMode == nil {
			src.Secret.DefaultMode = ptrTo(DefaultVolumeMode)
		}
	case src.ConfigMap != nil:
		if src.ConfigMap.DefaultMode == nil {
			src.ConfigMap.DefaultMode = ptrTo(DefaultVolumeMode)
		}
	case src.DownwardAPI != nil:
		if src.DownwardAPI.DefaultMode == nil {
			src.DownwardAPI.DefaultMode = ptrTo(DefaultVolumeMode)
		}
		defaultDownwardAPIItems(src.DownwardAPI.Items)
	case src.Projected != nil:
		if src.Projected.DefaultMode == nil {
			src.Projected.DefaultMode = ptrTo(DefaultVolumeMode)
		}
		for i := range src.Projected.Sources {
			ps := &src.Projected.Sources[i]
			if ps.ServiceAccountToken != nil && ps.ServiceAccountToken.ExpirationSeconds == nil {
				ps.ServiceAccountToken.ExpirationSeconds = ptrTo(DefaultTokenExpirationSeconds)
			}
			if ps.DownwardAPI != nil {
				defaultDownwardAPIItems(ps.DownwardAPI.Items)
			}
		}
	case src.HostPath != nil:
		if src.HostPath.Type == nil {
			src.HostPath.Type = ptrTo(corev1.HostPathUnset)
		}
	case src.Ephemeral != nil:
		if src.Ephemeral.VolumeClaimTemplate != nil {
			defaultPVCSpec(&src.Ephemeral.VolumeClaimTemplate.Spec)
		}
	case src.ISCSI != nil:
		if src.ISCSI.ISCSIInterface == "" {
			src.ISCSI.ISCSIInterface = "default"
		}
	case src.RBD != nil:
		if src.RBD.RBDPool == "" {
			src.RBD.RBDPool = "rbd"
		}
		if src.RBD.RadosUser == "" {
			src.RBD.RadosUser = "admin"
		}
		if src.RBD.Keyring == "" {
			src.RBD.Keyring = "/etc/ceph/keyring"
		}
	}
}

func defaultDownwardAPIItems(items []corev1.DownwardAPIVolumeFile) {
	for i := range items {
		if items[i].FieldRef != nil && items[i].FieldRef.APIVersion == "" {
			items[i].FieldRef.APIVersion = "v1"
		}
	}
}

// defaultResourceList rounds quantities up to milli precision, as Kubernetes
// does so that "0.0001" CPU cannot be stored as a value nothing can honour.
func defaultResourceList(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(resource.Milli)
		list[name] = q
	}
}

func defaultPVCSpec(s *corev1.PersistentVolumeClaimSpec) {
	if s.VolumeMode == nil {
		s.VolumeMode = ptrTo(corev1.PersistentVolumeFilesystem)
	}
	defaultResourceList(s.Resources.Limits)
	defaultResourceList(s.Resources.Requests)
}

func defaultPersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) {
	defaultPVCSpec(&pvc.Spec)
	if pvc.Status.Phase == "" {
		pvc.Status.Phase = corev1.ClaimPending
	}
}

// targetPortUnset reports whether a Service port's targetPort was omitted.
func targetPortUnset(tp intstr.IntOrString) bool {
	return tp.Type == intstr.Int && tp.IntVal == 0 || tp.Type == intstr.String && tp.StrVal == ""
}
