package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func validPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			Volumes:        []corev1.Volume{{Name: "data"}},
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1.36", Command: []string{"true"}}},
			Containers: []corev1.Container{{
				Name:         "app",
				Image:        "nginx:1.27",
				Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
				Env:          []corev1.EnvVar{{Name: "MODE", Value: "prod"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				},
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}},
			}},
		},
	}
}

func podWith(mutate func(*corev1.Pod)) *corev1.Pod {
	p := validPod()
	mutate(p)
	return defaulted(p)
}

func TestValidatePod(t *testing.T) {
	runCreate(t, []testCase{
		{name: "valid pod", obj: defaulted(validPod())},
		{name: "bad name", obj: podWith(func(p *corev1.Pod) { p.Name = "Web_1" }), want: []want{{"metadata.name", invalid}}},
		{name: "missing namespace", obj: podWith(func(p *corev1.Pod) { p.Namespace = "" }), want: []want{{"metadata.namespace", required}}},
		{name: "bad label", obj: podWith(func(p *corev1.Pod) { p.Labels["bad key!"] = "x" }), want: []want{{"metadata.labels", invalid}}},
		{name: "no containers", obj: podWith(func(p *corev1.Pod) { p.Spec.Containers = nil }), want: []want{{"spec.containers", required}}},
		{name: "image required", obj: podWith(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }),
			want: []want{{"spec.containers[0].image", required}}},
		{name: "padded image", obj: podWith(func(p *corev1.Pod) { p.Spec.Containers[0].Image = " nginx" }),
			want: []want{{"spec.containers[0].image", invalid}}},
		{name: "env value and valueFrom", obj: podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env[0].ValueFrom = &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}
		}), want: []want{{"spec.containers[0].env[0].valueFrom", invalid}}},
		{name: "env valueFrom without source", obj: podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env[0] = corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{}}
		}), want: []want{{"spec.containers[0].env[0].valueFrom", invalid}}},
		{name: "container name not a DNS label", obj: podWith(func(p *corev1.Pod) { p.Spec.Containers[0].Name = "App" }),
			want: []want{{"spec.containers[0].name", invalid}}},
		{name: "container name required", obj: podWith(func(p *corev1.Pod) { p.Spec.Containers[0].Name = "" }),
			want: []want{{"spec.containers[0].name", required}}},
		{name: "container names unique across init and app", obj: podWith(func(p *corev1.Pod) { p.Spec.Containers[0].Name = "init" }),
			want: []want{{"spec.containers[0].name", duplicate}}},
		{name: "port out of range", obj: podWith(func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 70000 }),
			want: []want{{"spec.containers[0].ports[0].containerPort", invalid}}},
		{name: "port required", obj: podWith(func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 0 }),
			want: []want{{"spec.containers[0].ports[0].containerPort", required}}},
		{name: "port name too long", obj: podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports[0].Name = "a-very-long-port-name"
			p.Spec.Containers[0].LivenessProbe = nil
		}), want: []want{{"spec.containers[0].ports[0].name", invalid}}},
		{name: "duplicate port name", obj: podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{Name: "http", ContainerPort: 81})
		}), want: []want{{"spec.containers[0].ports[1].name", duplicate}}},
		{name: "bad protocol", obj: podWith(func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].Protocol = "ICMP" }),
			want: []want{{"spec.containers[0].ports[0].protocol", notSupported}}},
		{name: "bad env name", obj: podWith(func(p *corev1.Pod) { p.Spec.Containers[0].Env[0].Name = "A=B" }),
			want: []want{{"spec.containers[0].env[0].name", invalid}}},
		{name: "env name required", obj: podWith(func(p *corev1.Pod) { p.Spec.Containers[0].Env[0].Name = "" }),
			want: []want{{"spec.containers[0].env[0].name", required}}},
		{name: "mount of undeclared volume", obj: podWith(func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].Name = "cache" }),
			want: []want{{"spec.containers[0].volumeMounts[0].name", notFound}}},
		{name: "recursive read-only mount that is not read-only", obj: podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts[0].RecursiveReadOnly = ptr.To(corev1.RecursiveReadOnlyEnabled)
		}), want: []want{{"spec.containers[0].volumeMounts.recursiveReadOnly", forbidden}}},
		{name: "recursive read-only mount with propagation", obj: podWith(func(p *corev1.Pod) {
			m := &p.Spec.Containers[0].VolumeMounts[0]
			m.ReadOnly, m.RecursiveReadOnly, m.MountPropagation = true, ptr.To(corev1.RecursiveReadOnlyIfPossible), ptr.To(corev1.MountPropagationHostToContainer)
		}), want: []want{{"spec.containers[0].volumeMounts.recursiveReadOnly", forbidden}}},
		{name: "unknown recursive read-only mode", obj: podWith(func(p *corev1.Pod) {
			m := &p.Spec.Containers[0].VolumeMounts[0]
			m.ReadOnly, m.RecursiveReadOnly = true, ptr.To(corev1.RecursiveReadOnlyMode("Always"))
		}), want: []want{{"spec.containers[0].volumeMounts.recursiveReadOnly", notSupported}}},
		{name: "duplicate volume", obj: podWith(func(p *corev1.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data"}) }),
			want: []want{{"spec.volumes[1].name", duplicate}}},
		{name: "two volume sources", obj: podWith(func(p *corev1.Pod) {
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}, HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}
		}), want: []want{{"spec.volumes[0].hostPath", forbidden}}},
		{name: "request above limit", obj: podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
		}), want: []want{{"spec.containers[0].resources.requests[cpu]", invalid}}},
		{name: "negative quantity", obj: podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("-1Mi")
		}), want: []want{{"spec.containers[0].resources.limits[memory]", invalid}, {"spec.containers[0].resources.requests[memory]", invalid}}},
		{name: "restartPolicy enum", obj: podWith(func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }),
			want: []want{{"spec.restartPolicy", notSupported}}},
		{name: "dnsPolicy enum", obj: podWith(func(p *corev1.Pod) { p.Spec.DNSPolicy = "Google" }),
			want: []want{{"spec.dnsPolicy", notSupported}}},
		{name: "probe without handler", obj: podWith(func(p *corev1.Pod) { p.Spec.Containers[0].LivenessProbe.HTTPGet = nil }),
			want: []want{{"spec.containers[0].livenessProbe", required}}},
		{name: "probe with two handlers", obj: podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}
		}), want: []want{{"spec.containers[0].livenessProbe.tcpSocket", forbidden}}},
		{name: "liveness successThreshold must be 1", obj: podWith(func(p *corev1.Pod) { p.Spec.Containers[0].LivenessProbe.SuccessThreshold = 2 }),
			want: []want{{"spec.containers[0].livenessProbe.successThreshold", invalid}}},
		{name: "init container may not be probed", obj: podWith(func(p *corev1.Pod) {
			p.Spec.InitContainers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		}), want: []want{{"spec.initContainers[0].readinessProbe", forbidden}}},
		{name: "sidecar init container may be probed", obj: podWith(func(p *corev1.Pod) {
			always := corev1.ContainerRestartPolicyAlways
			p.Spec.InitContainers[0].RestartPolicy = &always
			p.Spec.InitContainers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		})},
		{name: "toleration with empty key needs Exists", obj: podWith(func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpEqual, Value: "x"}}
		}), want: []want{{"spec.tolerations[0].operator", invalid}}},
		{name: "node affinity needs a term", obj: podWith(func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
		}), want: []want{{"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", required}}},
		{name: "node affinity In needs values", obj: podWith(func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn}}}}}}}
		}), want: []want{{"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values", required}}},
		{name: "pod anti-affinity needs a topology key", obj: podWith(func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}
		}), want: []want{{"spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey", required}}},
		{name: "valid topology spread", obj: podWith(func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
		})},
		{name: "topology spread maxSkew 0", obj: podWith(func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway}}
		}), want: []want{{"spec.topologySpreadConstraints[0].maxSkew", invalid}}},
		// Kubernetes only requires a topology key: one no node label can
		// carry makes the constraint unsatisfiable, not the pod invalid.
		{name: "topology spread key not a label name", obj: podWith(func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "not a label", WhenUnsatisfiable: corev1.DoNotSchedule}}
		})},
		{name: "topology spread repeated key and action", obj: podWith(func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{
				{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule},
				{MaxSkew: 2, TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway},
				{MaxSkew: 3, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule},
			}
		}), want: []want{{"spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}", duplicate}}},
		{name: "topology spread node inclusion policies", obj: podWith(func(p *corev1.Pod) {
			honor, bad := corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicy("Sometimes")
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule,
				NodeAffinityPolicy: &honor, NodeTaintsPolicy: &bad}}
		}), want: []want{{"spec.topologySpreadConstraints[0].nodeTaintsPolicy", notSupported}}},
		{name: "negative runAsUser", obj: podWith(func(p *corev1.Pod) {
			uid := int64(-1)
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid}
		}),
			want: []want{{"spec.securityContext.runAsUser", invalid}}},
		{name: "hostNetwork port mismatch", obj: podWith(func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports[0].HostPort = 8080
		}), want: []want{{"spec.containers[0].ports[0].containerPort", invalid}}},
		{name: "hostNetwork ports default to container ports", obj: podWith(func(p *corev1.Pod) { p.Spec.HostNetwork = true })},
		{name: "nodeName must be a subdomain", obj: podWith(func(p *corev1.Pod) { p.Spec.NodeName = "Node_1" }),
			want: []want{{"spec.nodeName", invalid}}},
		{name: "runtimeClassName a subdomain", obj: podWith(func(p *corev1.Pod) { p.Spec.RuntimeClassName = ptr.To("gvisor.example.com") })},
		{name: "runtimeClassName must be a subdomain", obj: podWith(func(p *corev1.Pod) { p.Spec.RuntimeClassName = ptr.To("Gvisor_1") }),
			want: []want{{"spec.runtimeClassName", invalid}}},
		{name: "runtimeClassName set must not be empty", obj: podWith(func(p *corev1.Pod) { p.Spec.RuntimeClassName = ptr.To("") }),
			want: []want{{"spec.runtimeClassName", invalid}}},
		{name: "env fieldRefs the downward API resolves", obj: podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{
				envField("A", "status.podIP"), envField("B", "metadata.labels['app']"),
				envField("C", "metadata.annotations['batch.kubernetes.io/job-completion-index']"),
			}
		})},
		{name: "env fieldRef to an unknown field", obj: podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{envField("A", "spec.hostname")}
		}), want: []want{{"spec.containers[0].env[0].valueFrom.fieldRef.fieldPath", notSupported}}},
		{name: "env fieldRef to a whole label map", obj: podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{envField("A", "metadata.labels")}
		}), want: []want{{"spec.containers[0].env[0].valueFrom.fieldRef.fieldPath", notSupported}}},
		{name: "env fieldRef subscript of a plain field", obj: podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{envField("A", "metadata.name['x']")}
		}), want: []want{{"spec.containers[0].env[0].valueFrom.fieldRef", invalid}}},
		{name: "env fieldRef to an impossible label key", obj: podWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{envField("A", "metadata.labels['a b']")}
		}), want: []want{{"spec.containers[0].env[0].valueFrom.fieldRef", invalid}}},
		{name: "env fieldRef of another API version", obj: podWith(func(p *corev1.Pod) {
			e := envField("A", "metadata.name")
			e.ValueFrom.FieldRef.APIVersion = "v2"
			p.Spec.Containers[0].Env = []corev1.EnvVar{e}
		}), want: []want{{"spec.containers[0].env[0].valueFrom.fieldRef.fieldPath", invalid}}},
		{name: "downwardAPI volume files", obj: podWith(func(p *corev1.Pod) {
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				{Path: "app", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}},
				{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu"}},
			}}}
		})},
		{name: "scheduling gates", obj: podWith(func(p *corev1.Pod) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/quota"}, {Name: "ready"}}
		})},
		{name: "bad and repeated scheduling gates", obj: podWith(func(p *corev1.Pod) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "not a name"}, {Name: "ready"}, {Name: "ready"}}
		}), want: []want{{"spec.schedulingGates[0]", invalid}, {"spec.schedulingGates[2]", duplicate}}},
		{name: "a gated pod cannot name its node", obj: podWith(func(p *corev1.Pod) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "ready"}}
			p.Spec.NodeName = "n1"
		}), want: []want{{"spec.nodeName", forbidden}}},
		{name: "downwardAPI volume file problems", obj: podWith(func(p *corev1.Pod) {
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "ip", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}},
				{Path: "../up", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
				{Path: "none"},
			}}}
		}), want: []want{{"spec.volumes[0].downwardAPI.items[0].fieldRef.fieldPath", notSupported},
			{"spec.volumes[0].downwardAPI.items[1].path", invalid}, {"spec.volumes[0].downwardAPI.items[2]", required}}},
	})
}

func envField(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func TestPodErrorReadsLikeKubernetes(t *testing.T) {
	errs := Validate(podWith(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }))
	if len(errs) != 1 || errs[0].Error() != "spec.containers[0].image: Required value" {
		t.Fatalf("got %v", errs)
	}
	errs = Validate(podWith(func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }))
	want := `spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`
	if len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("got %v\nwant %s", errs, want)
	}
}

func storedPod() *corev1.Pod {
	p := defaulted(validPod())
	p.UID = "uid-1"
	p.ResourceVersion = "7"
	p.CreationTimestamp = metav1.Now()
	return p
}

func TestValidatePodUpdate(t *testing.T) {
	old := storedPod()
	change := func(mutate func(*corev1.Pod)) *corev1.Pod {
		p := old.DeepCopy()
		mutate(p)
		return p
	}
	runUpdate(t, []updateCase{
		{name: "image change allowed", old: old, new: change(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" })},
		{name: "labels may change", old: old, new: change(func(p *corev1.Pod) { p.Labels["tier"] = "front" })},
		{name: "unconditional update without resourceVersion", old: old, new: change(func(p *corev1.Pod) { p.ResourceVersion = "" })},
		{name: "adding a toleration allowed", old: old, new: change(func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists})
		})},
		{name: "activeDeadlineSeconds may be set", old: old, new: change(func(p *corev1.Pod) { v := int64(60); p.Spec.ActiveDeadlineSeconds = &v })},
		{name: "port change forbidden", old: old, new: change(func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 81 }),
			want: []want{{"spec", forbidden}}},
		{name: "adding a container forbidden", old: old, new: change(func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side", Image: "x:1", ImagePullPolicy: "IfNotPresent", TerminationMessagePolicy: "File"})
		}), want: []want{{"spec.containers", forbidden}}},
		{name: "name immutable", old: old, new: change(func(p *corev1.Pod) { p.Name = "other" }), want: []want{{"metadata.name", invalid}}},
		{name: "uid immutable", old: old, new: change(func(p *corev1.Pod) { p.UID = "uid-2" }), want: []want{{"metadata.uid", invalid}}},
		{name: "labels may change on a pod with ephemeral containers", old: withEphemeral(old), new: change(func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = withEphemeral(old).Spec.EphemeralContainers
			p.Labels["debugged"] = "yes"
		})},
		{name: "creationTimestamp immutable", old: old, new: change(func(p *corev1.Pod) { p.CreationTimestamp = metav1.Unix(1, 0) }),
			want: []want{{"metadata.creationTimestamp", invalid}}},
		{name: "removing a toleration forbidden", old: change(func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
		}), new: old, want: []want{{"spec.tolerations", forbidden}}},
	})

	errs := ValidateUpdate(change(func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 81 }), old)
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`") {
		t.Fatalf("message = %v", errs)
	}
}

func TestValidateUpdateDoesNotModifyInput(t *testing.T) {
	old := storedPod()
	n := old.DeepCopy()
	n.ResourceVersion = ""
	ValidateUpdate(n, old)
	if n.ResourceVersion != "" {
		t.Fatal("ValidateUpdate wrote to the new object")
	}
}

func TestValidateUpdateTypeMismatch(t *testing.T) {
	errs := ValidateUpdate(&corev1.Pod{}, &corev1.Service{})
	if len(errs) != 1 {
		t.Fatalf("got %v", errs)
	}
	if errs := ValidateUpdate(nil, &corev1.Pod{}); len(errs) != 1 {
		t.Fatalf("nil object: got %v", errs)
	}
}

func TestValidateContentLeavesMetadataToTheCaller(t *testing.T) {
	p := podWith(func(p *corev1.Pod) { p.Name = "Bad_Name"; p.Spec.Containers[0].Image = "" })
	expectErrors(t, ValidateContent(p), []want{{"spec.containers[0].image", required}})
	expectErrors(t, Validate(p), []want{{"metadata.name", invalid}, {"spec.containers[0].image", required}})

	old := storedPod()
	n := old.DeepCopy()
	n.Name = "renamed"
	n.Spec.Containers[0].Ports[0].ContainerPort = 81
	expectErrors(t, ValidateContentUpdate(n, old), []want{{"spec", forbidden}})
	expectErrors(t, ValidateUpdate(n, old), []want{{"metadata.name", invalid}, {"spec", forbidden}})
}

func withEphemeral(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox:1.36", ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile}}}
	return p
}

func TestEphemeralContainersForbiddenOnCreate(t *testing.T) {
	expectErrors(t, Validate(withEphemeral(defaulted(validPod()))), []want{{"spec.ephemeralContainers", forbidden}})
}

// controller.kubernetes.io/pod-deletion-cost must be a plain 32-bit integer,
// as Kubernetes requires; a pod stored with a bad value may keep it.
func TestPodDeletionCost(t *testing.T) {
	withCost := func(p *corev1.Pod, v string) *corev1.Pod {
		p = p.DeepCopy()
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[corev1.PodDeletionCost] = v
		return p
	}
	var cases []testCase
	for _, v := range []string{"0", "-5", "2147483647", "-2147483648"} {
		cases = append(cases, testCase{name: "cost " + v, obj: withCost(defaulted(validPod()), v)})
	}
	for _, v := range []string{"", "abc", "+1", "007", "2147483648", "1.5"} {
		cases = append(cases, testCase{name: "cost " + v, obj: withCost(defaulted(validPod()), v),
			want: []want{{"metadata.annotations[controller.kubernetes.io/pod-deletion-cost]", invalid}}})
	}
	runCreate(t, cases)

	old := storedPod()
	runUpdate(t, []updateCase{
		{name: "valid cost set later", old: old, new: withCost(old, "10")},
		{name: "invalid cost set later", old: old, new: withCost(old, "ten"),
			want: []want{{"metadata.annotations[controller.kubernetes.io/pod-deletion-cost]", invalid}}},
		{name: "stored invalid cost kept", old: withCost(old, "ten"), new: withCost(old, "eleven")},
	})
}
