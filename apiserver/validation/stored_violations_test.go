package validation

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// twoOfEach gives s two init containers (setup, migrate), two app
// containers (a, b) and two volumes (v, w), for the cases below to give one
// of them a violation and to reorder them.
func twoOfEach(s *corev1.PodSpec) {
	s.Volumes = []corev1.Volume{
		{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "w", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	s.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox:1.36"}, {Name: "migrate", Image: "busybox:1.36"}}
	s.Containers = []corev1.Container{{Name: "a", Image: "nginx:1.27"}, {Name: "b", Image: "nginx:1.27"}}
}

// writableRRO mounts volume name at path recursively read-only but
// writable, which recursiveReadOnly forbids.
func writableRRO(c *corev1.Container, name, path string) {
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: path, RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyEnabled)})
}

// spread is a topology spread constraint over key with the given
// matchLabelKeys; "app" among them breaks the rule (it is in the selector).
func spread(key string, labelKeys ...string) corev1.TopologySpreadConstraint {
	return corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: matchLabels("app", "web"), MatchLabelKeys: labelKeys}
}

func swapContainers(l []corev1.Container) { l[0], l[1] = l[1], l[0] }

// A template stored with a violation of a rule skiff added later keeps it
// when the update only moves it: reordering containers, init containers,
// mounts, spread constraints, affinity terms or label keys adds nothing.
// A violation the update adds is refused, even beside a reorder, even the
// same one again elsewhere.
func TestStoredViolationsSurviveReordering(t *testing.T) {
	const (
		b     = "spec.template.spec.containers[1]"
		a     = "spec.template.spec.containers[0]"
		terms = "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"
	)
	half := func(c *corev1.Container) { procMount(c, "Half") }
	badSpread := func(s *corev1.PodSpec) {
		s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{
			spread(corev1.LabelTopologyZone, labelKeyHash), spread(corev1.LabelHostname, "app")}
	}
	badTerm := func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			{TopologyKey: corev1.LabelHostname, LabelSelector: matchLabels("app", "web"), MatchLabelKeys: []string{labelKeyHash}},
			{TopologyKey: corev1.LabelTopologyZone, MatchLabelKeys: []string{labelKeyHash}}}}}
	}
	cases := []struct {
		name   string
		stored func(*corev1.PodSpec) // the violation the template was stored with
		update func(*corev1.PodSpec)
		want   []want
	}{
		{name: "unknown procMount in b, containers reordered",
			stored: func(s *corev1.PodSpec) { half(&s.Containers[1]) },
			update: func(s *corev1.PodSpec) { swapContainers(s.Containers) }},
		{name: "Unmasked in b, containers reordered",
			stored: func(s *corev1.PodSpec) { procMount(&s.Containers[1], corev1.UnmaskedProcMount) },
			update: func(s *corev1.PodSpec) { swapContainers(s.Containers) }},
		{name: "unknown procMount in an init container, init containers reordered",
			stored: func(s *corev1.PodSpec) { half(&s.InitContainers[1]) },
			update: func(s *corev1.PodSpec) { swapContainers(s.InitContainers) }},
		{name: "writable recursiveReadOnly mount in b, containers reordered",
			stored: func(s *corev1.PodSpec) { writableRRO(&s.Containers[1], "v", "/v") },
			update: func(s *corev1.PodSpec) { swapContainers(s.Containers) }},
		{name: "writable recursiveReadOnly mount in b, b's mounts reordered",
			stored: func(s *corev1.PodSpec) {
				s.Containers[1].VolumeMounts = []corev1.VolumeMount{{Name: "w", MountPath: "/w"}}
				writableRRO(&s.Containers[1], "v", "/v")
			},
			update: func(s *corev1.PodSpec) {
				m := s.Containers[1].VolumeMounts
				m[0], m[1] = m[1], m[0]
			}},
		{name: "bad spread constraint, constraints reordered", stored: badSpread,
			update: func(s *corev1.PodSpec) {
				c := s.TopologySpreadConstraints
				c[0], c[1] = c[1], c[0]
			}},
		{name: "bad affinity term, terms reordered", stored: badTerm,
			update: func(s *corev1.PodSpec) {
				l := s.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
				l[0], l[1] = l[1], l[0]
			}},
		{name: "bad label key, keys reordered",
			stored: func(s *corev1.PodSpec) {
				s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{spread(corev1.LabelHostname, "bad key!", labelKeyHash)}
			},
			update: func(s *corev1.PodSpec) {
				s.TopologySpreadConstraints[0].MatchLabelKeys = []string{labelKeyHash, "bad key!"}
			}},

		{name: "reordered, and a gains the violation b has",
			stored: func(s *corev1.PodSpec) { half(&s.Containers[1]) },
			update: func(s *corev1.PodSpec) { swapContainers(s.Containers); half(&s.Containers[1]) },
			want:   []want{{b + ".securityContext.procMount", notSupported}}},
		{name: "the violation moves from b to a",
			stored: func(s *corev1.PodSpec) { half(&s.Containers[1]) },
			update: func(s *corev1.PodSpec) { s.Containers[1].SecurityContext = nil; half(&s.Containers[0]) },
			want:   []want{{a + ".securityContext.procMount", notSupported}}},
		{name: "a new container with the same violation",
			stored: func(s *corev1.PodSpec) { half(&s.Containers[1]) },
			update: func(s *corev1.PodSpec) {
				s.Containers = append(s.Containers, *s.Containers[1].DeepCopy())
				s.Containers[2].Name = "c"
			},
			want: []want{{"spec.template.spec.containers[2].securityContext.procMount", notSupported}}},
		{name: "the container with the violation renamed",
			stored: func(s *corev1.PodSpec) { half(&s.Containers[1]) },
			update: func(s *corev1.PodSpec) { s.Containers[1].Name = "c" },
			want:   []want{{b + ".securityContext.procMount", notSupported}}},
		{name: "a second writable recursiveReadOnly mount in b",
			stored: func(s *corev1.PodSpec) { writableRRO(&s.Containers[1], "v", "/v") },
			update: func(s *corev1.PodSpec) { writableRRO(&s.Containers[1], "w", "/w") },
			want:   []want{{b + ".volumeMounts.recursiveReadOnly", forbidden}}},
		{name: "a second spread constraint with the same bad key", stored: badSpread,
			update: func(s *corev1.PodSpec) {
				s.TopologySpreadConstraints = append(s.TopologySpreadConstraints, spread(corev1.LabelHostname, "app"))
				s.TopologySpreadConstraints[2].WhenUnsatisfiable = corev1.ScheduleAnyway
			},
			want: []want{{"spec.template.spec.topologySpreadConstraints[2].matchLabelKeys[0]", invalid}}},
		{name: "a second bad affinity term", stored: badTerm,
			update: func(s *corev1.PodSpec) {
				l := &s.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
				*l = append(*l, (*l)[1])
			},
			want: []want{{terms + "[2].matchLabelKeys", forbidden}}},
		{name: "reordered, and another rule broken",
			stored: func(s *corev1.PodSpec) { half(&s.Containers[1]) },
			update: func(s *corev1.PodSpec) { swapContainers(s.Containers); s.RuntimeClassName = ptr.To("Bad_Name") },
			want:   []want{{"spec.template.spec.runtimeClassName", invalid}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := stored(deploymentWith(func(d *appsv1.Deployment) {
				twoOfEach(&d.Spec.Template.Spec)
				tc.stored(&d.Spec.Template.Spec)
			}))
			if len(Validate(old)) == 0 {
				t.Fatal("the stored template breaks no rule: the case proves nothing")
			}
			upd := old.DeepCopy()
			tc.update(&upd.Spec.Template.Spec)
			expectErrors(t, ValidateUpdate(upd, old), tc.want)
			expectErrors(t, ValidateContentUpdate(upd, old), tc.want)
		})
	}
}

// Every kind whose stored pod spec is judged on update takes the reorder
// the same way: templates whose spec may change accept it; a Job's
// template, fixed once started, and a pod's spec refuse it for that reason
// alone, not for the violation moved.
func TestStoredViolationsSurviveReorderingInEveryKind(t *testing.T) {
	tpl := func() corev1.PodTemplateSpec {
		t := template()
		twoOfEach(&t.Spec)
		procMount(&t.Spec.Containers[1], "Half")
		return t
	}
	sel := &metav1.LabelSelector{MatchLabels: appLabels}
	job := func() *batchv1.Job {
		j := validJob()
		j.Spec.Template = tpl()
		j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		return j
	}
	cronJob := func() *batchv1.CronJob {
		c := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "default"},
			Spec: batchv1.CronJobSpec{Schedule: "*/5 * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tpl()}}}}
		c.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		return c
	}
	rc := func() *corev1.ReplicationController {
		t := tpl()
		return &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: corev1.ReplicationControllerSpec{Selector: appLabels, Template: &t}}
	}
	pod := func() *corev1.Pod {
		p := storedPod()
		twoOfEach(&p.Spec)
		procMount(&p.Spec.Containers[1], "Half")
		return p
	}
	meta := metav1.ObjectMeta{Name: "web", Namespace: "default"}
	cases := []struct {
		obj  runtime.Object
		want []want
	}{
		{obj: &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Selector: sel, Template: tpl()}}},
		{obj: &appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Selector: sel, Template: tpl()}}},
		{obj: &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Selector: sel, Template: tpl()}}},
		{obj: &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{ServiceName: "web", Selector: sel, Template: tpl()}}},
		{obj: cronJob()},
		{obj: rc()},
		{obj: job(), want: []want{{"spec.template", invalid}}},
		{obj: pod(), want: []want{{"spec", forbidden}}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%T", tc.obj), func(t *testing.T) {
			old := defaulted(tc.obj)
			old.(metav1.Object).SetResourceVersion("5")
			if len(Validate(old)) == 0 {
				t.Fatal("the stored object breaks no rule: the case proves nothing")
			}
			upd := old.DeepCopyObject()
			s, _ := podSpecOf(upd)
			swapContainers(s.Containers)
			expectErrors(t, ValidateUpdate(upd, old), tc.want)
		})
	}
}
