package warnings

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

var long = strings.Repeat("a", 64) // one past a DNS label's length

func ptr[T any](v T) *T { return &v }

func check(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}

// deprecatedSpec is a pod spec with one of most of what warns.
func deprecatedSpec() corev1.PodSpec {
	return corev1.PodSpec{
		NodeSelector:                  map[string]string{"beta.kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"},
		TerminationGracePeriodSeconds: ptr(int64(-1)),
		Containers:                    []corev1.Container{{Name: "c", Image: "i"}},
	}
}

func TestPodCreate(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: long, Annotations: map[string]string{
		corev1.SeccompPodAnnotationKey:                                  "runtime/default",
		corev1.SeccompContainerAnnotationKeyPrefix + "c":                "runtime/default",
		corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "localhost/prof",
		"scheduler.alpha.kubernetes.io/critical-pod":                    "",
	}}, Spec: deprecatedSpec()}
	check(t, "pod", OnCreate(pod),
		`metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: [must be no more than 63 characters]`,
		`metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]: deprecated since v1.30; use the "appArmorProfile" field instead`,
		`spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use "kubernetes.io/arch" instead`,
		`metadata.annotations[scheduler.alpha.kubernetes.io/critical-pod]: non-functional in v1.16+; use the "priorityClassName" field instead`,
		`metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]: non-functional in v1.27+; use the "seccompProfile" field instead`,
		`metadata.annotations[container.seccomp.security.alpha.kubernetes.io/c]: non-functional in v1.27+; use the "seccompProfile" field instead`,
		`spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1`,
	)

	// The fields stand for the annotations: nothing to say about them.
	pod.Name = "ok"
	pod.Spec = corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}, SecurityContext: &corev1.PodSecurityContext{
		SeccompProfile:  &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr("prof")},
	}}
	pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	delete(pod.Annotations, "scheduler.alpha.kubernetes.io/critical-pod")
	check(t, "annotations matching fields", OnCreate(pod))
	// An annotation naming another profile than the pod's still warns.
	pod.Spec.SecurityContext.AppArmorProfile.LocalhostProfile = ptr("other")
	check(t, "annotation unlike the pod's profile", OnCreate(pod),
		`metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]: deprecated since v1.30; use the "appArmorProfile" field instead`)
}

func TestContainers(t *testing.T) {
	spec := corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1500m")}}}},
		Containers: []corev1.Container{
			{Name: "a",
				Env:   []corev1.EnvVar{{Name: "X", Value: "1"}, {Name: "X", Value: "$(X):2"}, {Name: "Y", Value: "1"}, {Name: "Y", Value: "2"}},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}}},
			{Name: "b",
				Ports: []corev1.ContainerPort{
					{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP},
					{ContainerPort: 90, Protocol: corev1.ProtocolTCP, HostIP: "10.0.0.1"},
				}},
		},
		HostAliases:      []corev1.HostAlias{{IP: "010.0.0.1"}, {IP: "010.0.0.1"}, {IP: "2001:DB8::1"}},
		DNSConfig:        &corev1.PodDNSConfig{Nameservers: []string{"::ffff:1.2.3.4", "1.1.1.1"}},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "s"}, {Name: "s"}, {}},
	}
	check(t, "containers", OnCreate(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: spec}),
		`spec.hostAliases[1].ip: duplicate ip "010.0.0.1"`,
		`spec.imagePullSecrets[1].name: duplicate name "s"`,
		`spec.imagePullSecrets[2].name: invalid empty name ""`,
		`spec.initContainers[0].resources.limits[memory]: fractional byte value "1500m" is invalid, must be an integer`,
		// X redefined in terms of itself is fine; Y hides its first value.
		`spec.containers[0].env[3]: hides previous definition of "Y", which may be dropped when using apply`,
		`spec.containers[1].ports[0]: duplicate port definition with spec.containers[0].ports[0]`,
		`spec.containers[1].ports[1]: hostIP set without hostPort: {Name: HostPort:0 ContainerPort:90 Protocol:TCP HostIP:10.0.0.1}`,
		`spec.containers[1].ports[0]: duplicate port name "http" with spec.containers[0].ports[0], services and probes that select ports by name will use spec.containers[0].ports[0]`,
		`spec.dnsConfig.nameservers[0]: non-standard IP address "::ffff:1.2.3.4" will be considered invalid in a future Kubernetes release: use "1.2.3.4"`,
		`spec.hostAliases[0].ip: non-standard IP address "010.0.0.1" will be considered invalid in a future Kubernetes release: use "10.0.0.1"`,
		`spec.hostAliases[1].ip: non-standard IP address "010.0.0.1" will be considered invalid in a future Kubernetes release: use "10.0.0.1"`,
		`spec.hostAliases[2].ip: IPv6 address "2001:DB8::1" should be in RFC 5952 canonical format ("2001:db8::1")`,
	)
}

func TestSchedulingAndVolumes(t *testing.T) {
	spec := corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c"}},
		Affinity: &corev1.Affinity{
			NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "failure-domain.beta.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{long}}},
				}}},
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: corev1.NodeSelectorTerm{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{long}}},
				}}},
			},
			PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1}}},
		},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{TopologyKey: "node-role.kubernetes.io/master"}},
		Volumes: []corev1.Volume{
			{Name: "g", VolumeSource: corev1.VolumeSource{GitRepo: &corev1.GitRepoVolumeSource{Repository: "r"}}},
			{Name: "e", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("0.5")}}}}}}},
		},
	}
	check(t, "template", OnCreate(&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: long}, Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: spec}}}),
		// Required terms' values are validated, not warned about.
		`spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key: failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
		`spec.template.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values[0]: `+long+` is invalid, must be no more than 63 characters`,
		`spec.template.spec.topologySpreadConstraints[0].topologyKey: node-role.kubernetes.io/master is use "node-role.kubernetes.io/control-plane" instead`,
		`spec.template.spec.topologySpreadConstraints[0].labelSelector: a null labelSelector results in matching no pod`,
		`spec.template.spec.volumes[0].gitRepo: deprecated in v1.11, and disabled by default in v1.33+`,
		`spec.template.spec.volumes[1].ephemeral.volumeClaimTemplate.spec.resources.requests[storage]: fractional byte value "500m" is invalid, must be an integer`,
		`spec.template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.labelSelector: a null labelSelector results in matching no pod`,
	)
}

func TestWorkloadCreate(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{Spec: deprecatedSpec()}
	named := func(path string) []string {
		return []string{
			`metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must be no more than 63 characters]`,
			path + `.spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use "kubernetes.io/arch" instead`,
			path + `.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1`,
		}
	}
	meta := metav1.ObjectMeta{Name: long}
	check(t, "deployment", OnCreate(&appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Template: tmpl}}), named("spec.template")...)
	check(t, "replicaset", OnCreate(&appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Template: tmpl}}), named("spec.template")...)
	check(t, "job", OnCreate(&batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{Template: tmpl}}), named("spec.template")...)
	rc := &corev1.ReplicationController{ObjectMeta: meta, Spec: corev1.ReplicationControllerSpec{Template: &tmpl}}
	check(t, "replicationcontroller", OnCreate(rc), named("spec.template")...)
	check(t, "replicationcontroller unchanged", OnUpdate(rc, rc.DeepCopy()))
	scaled := rc.DeepCopy()
	scaled.Spec.Replicas = ptr(int32(3))
	scaled.Generation++ // as the strategy moves it
	check(t, "replicationcontroller scaled", OnUpdate(scaled, rc), named("spec.template")[1:]...)
	check(t, "cronjob", OnCreate(&batchv1.CronJob{ObjectMeta: meta, Spec: batchv1.CronJobSpec{
		JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}}}), named("spec.jobTemplate.spec.template")...)
	// A StatefulSet's name is validated as a DNS label; a PodTemplate's
	// names no pod.
	check(t, "podtemplate", OnCreate(&corev1.PodTemplate{ObjectMeta: meta, Template: tmpl}), named("template")[1:]...)

	check(t, "indexed job", OnCreate(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}, Spec: batchv1.JobSpec{
		CompletionMode: ptr(batchv1.IndexedCompletion), Completions: ptr(int32(100_001)), Parallelism: ptr(int32(10_001))}}),
		`spec: In Indexed Jobs with a number of completions higher than 10^5 and a parallelism higher than 10^4, Kubernetes might not be able to track completedIndexes when a big number of indexes fail`)

	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: appsv1.StatefulSetSpec{
		RevisionHistoryLimit: ptr(int32(-1)),
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1.5")}}}}},
	}}
	check(t, "statefulset", OnCreate(sts),
		`spec.volumeClaimTemplates[0].resources.limits[storage]: fractional byte value "1500m" is invalid, must be an integer`,
		`spec.revisionHistoryLimit: a negative value retains all historical revisions; a value >= 0 is recommended`)
	// Its update path spells the claim's spec as upstream does, and warns
	// about the claims whether or not the spec changed.
	check(t, "statefulset update", OnUpdate(sts, sts.DeepCopy()),
		`spec.volumeClaimTemplates[0].Spec.resources.limits[storage]: fractional byte value "1500m" is invalid, must be an integer`,
		`spec.revisionHistoryLimit: a negative value retains all historical revisions; a value >= 0 is recommended`)

	check(t, "config map", OnCreate(&corev1.ConfigMap{ObjectMeta: meta}))
}

// TestUpdateOnlyWhatChanged: updates warn about the pod template only when
// the generation moved (the strategy moves it on spec changes, and on a
// Deployment's annotation changes; apiserver's TestKindWarnings goes
// through the real strategy).
func TestUpdateOnlyWhatChanged(t *testing.T) {
	tmplWarnings := []string{
		`spec.template.spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use "kubernetes.io/arch" instead`,
		`spec.template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1`,
	}
	old := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: long}, Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(1)), Template: corev1.PodTemplateSpec{Spec: deprecatedSpec()}}}
	labelled := old.DeepCopy()
	labelled.Labels = map[string]string{"team": "a"}
	check(t, "labels changed", OnUpdate(labelled, old))
	scaled := old.DeepCopy()
	scaled.Spec.Replicas = ptr(int32(3))
	scaled.Generation++
	// The name is warned about on create only.
	check(t, "scaled", OnUpdate(scaled, old), tmplWarnings...)
	annotated := old.DeepCopy()
	annotated.Annotations = map[string]string{"note": "x"}
	annotated.Generation++
	check(t, "deployment annotations changed", OnUpdate(annotated, old), tmplWarnings...)

	ds := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: deprecatedSpec()}}}
	ds2 := ds.DeepCopy()
	ds2.Spec.MinReadySeconds = 5
	check(t, "daemonset without template change", OnUpdate(ds2, ds))
	ds2.Spec.Template.Labels = map[string]string{"v": "2"}
	check(t, "daemonset template changed", OnUpdate(ds2, ds), tmplWarnings...)

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: long}, Spec: deprecatedSpec()}
	pod2 := pod.DeepCopy()
	pod2.Spec.Containers[0].Image = "j"
	check(t, "pod update", OnUpdate(pod2, pod))

	cj := &batchv1.CronJob{Spec: batchv1.CronJobSpec{Schedule: "CRON_TZ=UTC 0 * * * *",
		JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: deprecatedSpec()}}}}}
	cj2 := cj.DeepCopy()
	cj2.Labels = map[string]string{"a": "b"}
	tz := `cannot use TZ or CRON_TZ in spec.spec.schedule, use timeZone instead, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details`
	check(t, "cronjob labels changed", OnUpdate(cj2, cj), tz)
	cj2.Spec.Suspend = ptr(true)
	cj2.Generation++
	check(t, "cronjob spec changed", OnUpdate(cj2, cj),
		`spec.jobTemplate.spec.template.spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use "kubernetes.io/arch" instead`,
		`spec.jobTemplate.spec.template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1`,
		tz)

	// A mismatched old object (never passed by the handler) warns of nothing.
	var none runtime.Object = &corev1.ConfigMap{}
	check(t, "mismatch", OnUpdate(scaled, none))
}

// TestService: v1.33's GetWarningsForService, in its order, on create and on
// every update.
func TestService(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{corev1.DeprecatedAnnotationTopologyAwareHints: "auto"}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.0.0.010", ClusterIPs: []string{"10.0.0.010", "2001:DB8::1"},
			ExternalIPs:              []string{"192.168.001.2", "::ffff:1.2.3.4", "1.2.3.4"},
			LoadBalancerIP:           "2001:db8:0::5",
			LoadBalancerSourceRanges: []string{"10.0.0.1/8", "010.0.0.0/8", "2001:DB8::/32", "::ffff:1.2.3.0/120", "10.0.0.0/8", "not a cidr"},
			ExternalName:             "example.com",
		},
	}
	want := []string{
		"annotation service.kubernetes.io/topology-aware-hints is deprecated, please use service.kubernetes.io/topology-mode instead",
		`spec.clusterIPs[0]: non-standard IP address "10.0.0.010" will be considered invalid in a future Kubernetes release: use "10.0.0.10"`,
		`spec.clusterIPs[1]: IPv6 address "2001:DB8::1" should be in RFC 5952 canonical format ("2001:db8::1")`,
		`spec.externalIPs[0]: non-standard IP address "192.168.001.2" will be considered invalid in a future Kubernetes release: use "192.168.1.2"`,
		`spec.externalIPs[1]: non-standard IP address "::ffff:1.2.3.4" will be considered invalid in a future Kubernetes release: use "1.2.3.4"`,
		`spec.loadBalancerIP: IPv6 address "2001:db8:0::5" should be in RFC 5952 canonical format ("2001:db8::5")`,
		`spec.loadBalancerSourceRanges[0]: CIDR value "10.0.0.1/8" is ambiguous in this context (should be "10.0.0.0/8" or "10.0.0.1/32"?)`,
		`spec.loadBalancerSourceRanges[1]: non-standard CIDR value "010.0.0.0/8" will be considered invalid in a future Kubernetes release: use "10.0.0.0/8"`,
		`spec.loadBalancerSourceRanges[2]: IPv6 CIDR value "2001:DB8::/32" should be in RFC 5952 canonical format ("2001:db8::/32")`,
		`spec.loadBalancerSourceRanges[3]: non-standard CIDR value "::ffff:1.2.3.0/120" will be considered invalid in a future Kubernetes release: use "1.2.3.0/24"`,
		`spec.externalName is ignored when spec.type is not "ExternalName"`,
	}
	check(t, "create", OnCreate(svc), want...)
	check(t, "update", OnUpdate(svc, svc.DeepCopy()), want...)

	external := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com", ExternalIPs: []string{"1.2.3.4"}}}
	check(t, "ExternalName with externalIPs", OnCreate(external), `spec.externalIPs is ignored when spec.type is "ExternalName"`)
	headless := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: corev1.ClusterIPNone, ClusterIPs: []string{corev1.ClusterIPNone},
		SessionAffinity: corev1.ServiceAffinityClientIP}}
	check(t, "headless (v1.33 says nothing of what it ignores)", OnCreate(headless))
	check(t, "plain", OnCreate(&corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.0.0.10", ClusterIPs: []string{"10.0.0.10"}}}))
}
