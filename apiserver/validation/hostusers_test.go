package validation

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// withHostUsers sets the pod's hostUsers (spec.hostUsers).
func withHostUsers(hostUsers *bool, mutate func(*corev1.Pod)) *corev1.Pod {
	return podWith(func(p *corev1.Pod) {
		p.Spec.HostUsers = hostUsers
		if mutate != nil {
			mutate(p)
		}
	})
}

func procMount(c *corev1.Container, t corev1.ProcMountType) {
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	c.SecurityContext.ProcMount = &t
}

// As v1.33's validateHostUsers and ValidateSecurityContext: a pod in its
// own user namespace (hostUsers: false) may share none of the host's
// other namespaces (the paths are upstream's, HostPID and HostIPC
// capitalized as there), and only such a pod may ask for an Unmasked
// /proc. Volumes are not restricted (they were only before v1.30).
func TestValidatePodHostUsers(t *testing.T) {
	off, on := ptr.To(false), ptr.To(true)
	runCreate(t, []testCase{
		{name: "hostUsers false", obj: withHostUsers(off, nil)},
		{name: "hostUsers true", obj: withHostUsers(on, nil)},
		{name: "hostUsers false with every volume kind skiff mounts", obj: withHostUsers(off, func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes,
				corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv"}}},
				corev1.Volume{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}})
		})},
		{name: "hostUsers false with hostNetwork", obj: withHostUsers(off, func(p *corev1.Pod) { p.Spec.HostNetwork = true }),
			want: []want{{"spec.hostNetwork", forbidden}}},
		{name: "hostUsers false with hostPID", obj: withHostUsers(off, func(p *corev1.Pod) { p.Spec.HostPID = true }),
			want: []want{{"spec.HostPID", forbidden}}},
		{name: "hostUsers false with hostIPC", obj: withHostUsers(off, func(p *corev1.Pod) { p.Spec.HostIPC = true }),
			want: []want{{"spec.HostIPC", forbidden}}},
		{name: "hostUsers false with every host namespace", obj: withHostUsers(off, func(p *corev1.Pod) {
			p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = true, true, true
		}), want: []want{{"spec.hostNetwork", forbidden}, {"spec.HostPID", forbidden}, {"spec.HostIPC", forbidden}}},
		{name: "hostUsers true with every host namespace", obj: withHostUsers(on, func(p *corev1.Pod) {
			p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = true, true, true
		})},
		{name: "hostUsers unset with every host namespace", obj: withHostUsers(nil, func(p *corev1.Pod) {
			p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = true, true, true
		})},
		{name: "procMount Default", obj: withHostUsers(nil, func(p *corev1.Pod) { procMount(&p.Spec.Containers[0], corev1.DefaultProcMount) })},
		{name: "procMount Unmasked in the host's user namespace", obj: withHostUsers(nil, func(p *corev1.Pod) {
			procMount(&p.Spec.Containers[0], corev1.UnmaskedProcMount)
			procMount(&p.Spec.InitContainers[0], corev1.UnmaskedProcMount)
		}), want: []want{{"spec.containers[0].securityContext.procMount", invalid}, {"spec.initContainers[0].securityContext.procMount", invalid}}},
		{name: "procMount Unmasked with hostUsers true", obj: withHostUsers(on, func(p *corev1.Pod) { procMount(&p.Spec.Containers[0], corev1.UnmaskedProcMount) }),
			want: []want{{"spec.containers[0].securityContext.procMount", invalid}}},
		{name: "procMount Unmasked with hostUsers false", obj: withHostUsers(off, func(p *corev1.Pod) { procMount(&p.Spec.Containers[0], corev1.UnmaskedProcMount) })},
		{name: "unknown procMount", obj: withHostUsers(off, func(p *corev1.Pod) { procMount(&p.Spec.Containers[0], "Half") }),
			want: []want{{"spec.containers[0].securityContext.procMount", notSupported}}},
	})
}

func TestHostUsersErrorsReadLikeKubernetes(t *testing.T) {
	cases := []struct {
		pod  *corev1.Pod
		want string
	}{
		{withHostUsers(ptr.To(false), func(p *corev1.Pod) { p.Spec.HostNetwork = true }),
			"spec.hostNetwork: Forbidden: when `pod.Spec.HostUsers` is false"},
		{withHostUsers(ptr.To(false), func(p *corev1.Pod) { p.Spec.HostPID = true }),
			"spec.HostPID: Forbidden: when `pod.Spec.HostUsers` is false"},
		{withHostUsers(ptr.To(false), func(p *corev1.Pod) { p.Spec.HostIPC = true }),
			"spec.HostIPC: Forbidden: when `pod.Spec.HostUsers` is false"},
		{withHostUsers(nil, func(p *corev1.Pod) { procMount(&p.Spec.Containers[0], corev1.UnmaskedProcMount) }),
			"spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`"},
		{withHostUsers(nil, func(p *corev1.Pod) { procMount(&p.Spec.Containers[0], "Half") }),
			`spec.containers[0].securityContext.procMount: Unsupported value: "Half": supported values: "Default", "Unmasked"`},
	}
	for _, tc := range cases {
		errs := Validate(tc.pod)
		if len(errs) != 1 || errs[0].Error() != tc.want {
			t.Errorf("got %v\nwant %s", errs, tc.want)
		}
	}
}

// A workload's pod template is held to the same rules.
func TestTemplateHostUsers(t *testing.T) {
	runCreate(t, []testCase{
		{name: "template hostUsers false", obj: deploymentWith(func(d *appsv1.Deployment) { d.Spec.Template.Spec.HostUsers = ptr.To(false) })},
		{name: "template hostUsers false with hostPID", obj: deploymentWith(func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.HostUsers = ptr.To(false)
			d.Spec.Template.Spec.HostPID = true
		}), want: []want{{"spec.template.spec.HostPID", forbidden}}},
	})
}

// hostUsers is part of the pod spec, which is immutable but for a few
// fields: a pod cannot move into or out of a user namespace.
func TestHostUsersImmutable(t *testing.T) {
	old := storedPod()
	change := func(hostUsers *bool) *corev1.Pod {
		p := old.DeepCopy()
		p.Spec.HostUsers = hostUsers
		return p
	}
	inUserns := change(ptr.To(false))
	runUpdate(t, []updateCase{
		{name: "setting hostUsers false", old: old, new: change(ptr.To(false)), want: []want{{"spec", forbidden}}},
		{name: "setting hostUsers true", old: old, new: change(ptr.To(true)), want: []want{{"spec", forbidden}}},
		{name: "clearing hostUsers false", old: inUserns, new: change(nil), want: []want{{"spec", forbidden}}},
		{name: "keeping hostUsers false", old: inUserns, new: change(ptr.To(false))},
	})
}

// Pods and templates stored before skiff checked hostUsers, procMount,
// recursiveReadOnly and runtimeClassName keep them through updates that do
// not add a violation: a Job's pod must lose its tracking finalizer, a
// Deployment take its controller's annotations.
func TestStoredViolationsKeptThroughUpdates(t *testing.T) {
	for name, mut := range map[string]func(*corev1.PodSpec){
		"hostUsers false with hostPID":         func(s *corev1.PodSpec) { s.HostUsers = ptr.To(false); s.HostPID = true },
		"Unmasked in the host's users":         func(s *corev1.PodSpec) { procMount(&s.Containers[0], corev1.UnmaskedProcMount) },
		"unknown procMount":                    func(s *corev1.PodSpec) { procMount(&s.Containers[0], "Half") },
		"runtimeClassName not a DNS subdomain": func(s *corev1.PodSpec) { s.RuntimeClassName = ptr.To("Bad_Name") },
		"recursiveReadOnly on a writable mount": func(s *corev1.PodSpec) {
			s.Volumes = append(s.Volumes, corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			s.Containers[0].VolumeMounts = append(s.Containers[0].VolumeMounts,
				corev1.VolumeMount{Name: "v", MountPath: "/v", RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyEnabled)})
		},
	} {
		t.Run(name, func(t *testing.T) {
			old := storedPod()
			mut(&old.Spec)
			if len(Validate(old)) == 0 {
				t.Fatal("the stored pod breaks no rule: the test proves nothing")
			}
			old.Finalizers = []string{"batch.kubernetes.io/job-tracking"}
			upd := old.DeepCopy()
			upd.Finalizers = nil
			upd.Labels["x"] = "y"
			if errs := ValidateUpdate(upd, old); len(errs) != 0 {
				t.Errorf("removing the finalizer of a stored pod: %v", errs)
			}

			dep := deploymentWith(func(d *appsv1.Deployment) { mut(&d.Spec.Template.Spec) })
			dep.ResourceVersion = "3"
			upd2 := dep.DeepCopy()
			upd2.Annotations = map[string]string{"deployment.kubernetes.io/revision": "2"}
			if errs := ValidateUpdate(upd2, dep); len(errs) != 0 {
				t.Errorf("annotating a stored deployment: %v", errs)
			}
		})
	}

	// A violation the update adds is refused, though the object broke
	// another rule already.
	dep := deploymentWith(func(d *appsv1.Deployment) { procMount(&d.Spec.Template.Spec.Containers[0], "Half") })
	dep.ResourceVersion = "3"
	upd := dep.DeepCopy()
	upd.Spec.Template.Spec.HostUsers = ptr.To(false)
	upd.Spec.Template.Spec.HostIPC = true
	errs := ValidateUpdate(upd, dep)
	if len(errs) != 1 || errs[0].Field != "spec.template.spec.HostIPC" {
		t.Errorf("adding hostIPC to a template in a user namespace: got %v, want only the spec.template.spec.HostIPC error", errs)
	}
}
