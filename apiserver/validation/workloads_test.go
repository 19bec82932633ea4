package validation

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

var appLabels = map[string]string{"app": "web"}

func template() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}
}

func validDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: template(),
		},
	}
}

func deploymentWith(mutate func(*appsv1.Deployment)) *appsv1.Deployment {
	d := validDeployment()
	mutate(d)
	return defaulted(d)
}

func i32(v int32) *int32 { return &v }

func ios(v intstr.IntOrString) *intstr.IntOrString { return &v }

func TestValidateDeployment(t *testing.T) {
	runCreate(t, []testCase{
		{name: "valid", obj: defaulted(validDeployment())},
		{name: "selector required", obj: deploymentWith(func(d *appsv1.Deployment) { d.Spec.Selector = nil }),
			want: []want{{"spec.selector", required}, {"spec.template.metadata.labels", invalid}}},
		{name: "selector must match template", obj: deploymentWith(func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "other"} }),
			want: []want{{"spec.template.metadata.labels", invalid}}},
		{name: "empty selector", obj: deploymentWith(func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} }),
			want: []want{{"spec.selector", invalid}}},
		{name: "negative replicas", obj: deploymentWith(func(d *appsv1.Deployment) { d.Spec.Replicas = i32(-1) }),
			want: []want{{"spec.replicas", invalid}}},
		{name: "maxUnavailable and maxSurge both 0", obj: deploymentWith(func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: ios(intstr.FromInt32(0)), MaxSurge: ios(intstr.FromString("0%"))}
		}), want: []want{{"spec.strategy.rollingUpdate.maxUnavailable", invalid}}},
		{name: "maxUnavailable over 100%", obj: deploymentWith(func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: ios(intstr.FromString("110%"))}
		}), want: []want{{"spec.strategy.rollingUpdate.maxUnavailable", invalid}}},
		{name: "bad percent", obj: deploymentWith(func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ios(intstr.FromString("lots"))}
		}), want: []want{{"spec.strategy.rollingUpdate.maxSurge", invalid}}},
		{name: "Recreate with rollingUpdate", obj: deploymentWith(func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{}}
		}), want: []want{{"spec.strategy.rollingUpdate", forbidden}}},
		{name: "unknown strategy", obj: deploymentWith(func(d *appsv1.Deployment) { d.Spec.Strategy.Type = "BlueGreen" }),
			want: []want{{"spec.strategy.type", notSupported}}},
		{name: "template restartPolicy must be Always", obj: deploymentWith(func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever }),
			want: []want{{"spec.template.spec.restartPolicy", notSupported}}},
		{name: "template container image required", obj: deploymentWith(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "" }),
			want: []want{{"spec.template.spec.containers[0].image", required}}},
		{name: "template runtimeClassName must be a subdomain", obj: deploymentWith(func(d *appsv1.Deployment) { d.Spec.Template.Spec.RuntimeClassName = ptr.To("Gvisor_1") }),
			want: []want{{"spec.template.spec.runtimeClassName", invalid}}},
		{name: "template may hold a padded image placeholder", obj: deploymentWith(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = " " })},
		{name: "hostNetwork template without hostPort", obj: deploymentWith(func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.HostNetwork = true
			d.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 9100}}
		})},
		{name: "progressDeadline not above minReady", obj: deploymentWith(func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 600 }),
			want: []want{{"spec.progressDeadlineSeconds", invalid}}},
	})
}

func TestDeploymentErrorReadsLikeKubernetes(t *testing.T) {
	errs := Validate(deploymentWith(func(d *appsv1.Deployment) {
		d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: ios(intstr.FromInt32(0)), MaxSurge: ios(intstr.FromInt32(0))}
	}))
	want := "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("got %v\nwant %s", errs, want)
	}
	errs = Validate(deploymentWith(func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "other"} }))
	want = "spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("got %v\nwant %s", errs, want)
	}
}

func stored[T interface{ SetResourceVersion(string) }](obj T) T {
	obj.SetResourceVersion("5")
	return obj
}

func TestValidateWorkloadUpdates(t *testing.T) {
	oldD := stored(defaulted(validDeployment()))
	newSel := oldD.DeepCopy()
	newSel.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "v": "2"}}
	newSel.Spec.Template.Labels = map[string]string{"app": "web", "v": "2"}
	scaled := oldD.DeepCopy()
	scaled.Spec.Replicas = i32(5)
	scaled.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"

	oldRS := stored(defaulted(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: appLabels}, Template: template()}}))
	rsSel := oldRS.DeepCopy()
	rsSel.Spec.Selector.MatchLabels = map[string]string{"app": "web", "x": "y"}
	rsSel.Spec.Template.Labels = map[string]string{"app": "web", "x": "y"}

	oldDS := stored(defaulted(&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: appLabels}, Template: template()}}))
	dsSel := oldDS.DeepCopy()
	dsSel.Spec.Selector.MatchLabels = map[string]string{"app": "web", "x": "y"}
	dsSel.Spec.Template.Labels = map[string]string{"app": "web", "x": "y"}

	oldSS := stored(defaulted(validStatefulSet()))
	ssScaled := oldSS.DeepCopy()
	ssScaled.Spec.Replicas = i32(3)
	ssService := oldSS.DeepCopy()
	ssService.Spec.ServiceName = "other"

	runUpdate(t, []updateCase{
		{name: "deployment scale and image change", old: oldD, new: scaled},
		{name: "deployment selector immutable", old: oldD, new: newSel, want: []want{{"spec.selector", invalid}}},
		{name: "replicaset selector immutable", old: oldRS, new: rsSel, want: []want{{"spec.selector", invalid}}},
		{name: "daemonset selector immutable", old: oldDS, new: dsSel, want: []want{{"spec.selector", invalid}}},
		{name: "statefulset scale", old: oldSS, new: ssScaled},
		{name: "statefulset serviceName immutable", old: oldSS, new: ssService, want: []want{{"spec", forbidden}}},
	})
}

func validStatefulSet() *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: appsv1.StatefulSetSpec{
			ServiceName: "db",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template:    template(),
		},
	}
}

func TestValidateReplicaSetDaemonSetStatefulSet(t *testing.T) {
	rs := func(m func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
		r := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default"},
			Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: template()}}
		m(r)
		return defaulted(r)
	}
	ds := func(m func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
		d := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default"},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: template()}}
		m(d)
		return defaulted(d)
	}
	ss := func(m func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
		s := validStatefulSet()
		m(s)
		return defaulted(s)
	}
	runCreate(t, []testCase{
		{name: "replicaset valid", obj: rs(func(*appsv1.ReplicaSet) {})},
		{name: "replicaset negative replicas", obj: rs(func(r *appsv1.ReplicaSet) { r.Spec.Replicas = i32(-2) }), want: []want{{"spec.replicas", invalid}}},
		{name: "replicaset selector mismatch", obj: rs(func(r *appsv1.ReplicaSet) { r.Spec.Selector.MatchLabels["tier"] = "x" }),
			want: []want{{"spec.template.metadata.labels", invalid}}},
		{name: "daemonset valid", obj: ds(func(*appsv1.DaemonSet) {})},
		{name: "daemonset maxUnavailable and maxSurge 0", obj: ds(func(d *appsv1.DaemonSet) {
			d.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ios(intstr.FromInt32(0)), MaxSurge: ios(intstr.FromInt32(0))}
		}), want: []want{{"spec.updateStrategy.rollingUpdate.maxUnavailable", invalid}}},
		{name: "daemonset bad strategy", obj: ds(func(d *appsv1.DaemonSet) { d.Spec.UpdateStrategy.Type = "Sometimes" }),
			want: []want{{"spec.updateStrategy.type", notSupported}}},
		{name: "statefulset valid", obj: ss(func(*appsv1.StatefulSet) {})},
		{name: "statefulset bad podManagementPolicy", obj: ss(func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = "Random" }),
			want: []want{{"spec.podManagementPolicy", invalid}}},
		{name: "statefulset negative partition", obj: ss(func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: i32(-1)}
		}), want: []want{{"spec.updateStrategy.rollingUpdate.partition", invalid}}},
		{name: "statefulset selector required", obj: ss(func(s *appsv1.StatefulSet) { s.Spec.Selector = nil }),
			want: []want{{"spec.selector", required}, {"spec.template.metadata.labels", invalid}}},
		{name: "statefulset claim template needs access mode", obj: ss(func(s *appsv1.StatefulSet) {
			s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
		}), want: []want{{"spec.volumeClaimTemplates[0].spec.accessModes", required}}},
		{name: "statefulset containers may mount claim templates", obj: ss(func(s *appsv1.StatefulSet) {
			s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}}
			s.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		})},
		{name: "statefulset containers may not mount what is neither volume nor claim template", obj: ss(func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}), want: []want{{"spec.template.spec.containers[0].volumeMounts[0].name", notFound}}},
	})
}

func validJob() *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "job-uid"},
		Spec:       batchv1.JobSpec{Template: template()},
	}
	j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	return j
}

func jobWith(mutate func(*batchv1.Job)) *batchv1.Job {
	j := validJob()
	mutate(j)
	return defaulted(j)
}

func TestValidateJob(t *testing.T) {
	runCreate(t, []testCase{
		{name: "valid with generated selector", obj: jobWith(func(*batchv1.Job) {})},
		{name: "restartPolicy Always not allowed", obj: jobWith(func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "" }),
			want: []want{{"spec.template.spec.restartPolicy", notSupported}}},
		{name: "selector required when manual", obj: jobWith(func(j *batchv1.Job) { m := true; j.Spec.ManualSelector = &m }),
			want: []want{{"spec.selector", required}, {"spec.template.metadata.labels", invalid}}},
		{name: "manual selector must match", obj: jobWith(func(j *batchv1.Job) {
			m := true
			j.Spec.ManualSelector = &m
			j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
		}), want: []want{{"spec.template.metadata.labels", invalid}}},
		{name: "negative backoffLimit", obj: jobWith(func(j *batchv1.Job) { j.Spec.BackoffLimit = i32(-1) }),
			want: []want{{"spec.backoffLimit", invalid}}},
		{name: "indexed needs completions", obj: jobWith(func(j *batchv1.Job) {
			m := batchv1.IndexedCompletion
			j.Spec.CompletionMode = &m
			j.Spec.Parallelism = i32(2)
		}), want: []want{{"spec.completions", required}}},
	})

	old := stored(jobWith(func(*batchv1.Job) {}))
	newTemplate := old.DeepCopy()
	newTemplate.Spec.Template.Spec.Containers[0].Image = "perl:5"
	newSelector := old.DeepCopy()
	newSelector.Spec.Selector.MatchLabels["extra"] = "x"
	newSelector.Spec.Template.Labels["extra"] = "x"
	suspended := old.DeepCopy()
	yes := true
	suspended.Spec.Suspend = &yes
	retargeted := suspended.DeepCopy()
	retargeted.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"}
	runUpdate(t, []updateCase{
		{name: "suspend allowed", old: old, new: suspended},
		{name: "template immutable", old: old, new: newTemplate, want: []want{{"spec.template", invalid}}},
		{name: "selector immutable", old: old, new: newSelector, want: []want{{"spec.selector", invalid}, {"spec.template", invalid}}},
		{name: "suspended unstarted job may change node selector", old: suspended, new: retargeted},
	})
}

func TestValidateCronJob(t *testing.T) {
	cj := func(m func(*batchv1.CronJob)) *batchv1.CronJob {
		c := &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "default"},
			Spec: batchv1.CronJobSpec{
				Schedule:    "*/5 * * * *",
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: template()}},
			},
		}
		c.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		m(c)
		return defaulted(c)
	}
	tz := func(s string) *string { return &s }
	runCreate(t, []testCase{
		{name: "valid", obj: cj(func(*batchv1.CronJob) {})},
		{name: "descriptor schedule", obj: cj(func(c *batchv1.CronJob) { c.Spec.Schedule = "@hourly" })},
		{name: "valid time zone", obj: cj(func(c *batchv1.CronJob) { c.Spec.TimeZone = tz("Etc/UTC") })},
		{name: "schedule required", obj: cj(func(c *batchv1.CronJob) { c.Spec.Schedule = "" }), want: []want{{"spec.schedule", required}}},
		{name: "bad schedule", obj: cj(func(c *batchv1.CronJob) { c.Spec.Schedule = "every minute" }), want: []want{{"spec.schedule", invalid}}},
		{name: "TZ in schedule", obj: cj(func(c *batchv1.CronJob) { c.Spec.Schedule = "CRON_TZ=UTC 0 * * * *" }), want: []want{{"spec.schedule", invalid}}},
		{name: "unknown time zone", obj: cj(func(c *batchv1.CronJob) { c.Spec.TimeZone = tz("Mars/Olympus") }), want: []want{{"spec.timeZone", invalid}}},
		{name: "bad concurrencyPolicy", obj: cj(func(c *batchv1.CronJob) { c.Spec.ConcurrencyPolicy = "Sometimes" }),
			want: []want{{"spec.concurrencyPolicy", notSupported}}},
		{name: "name too long", obj: cj(func(c *batchv1.CronJob) { c.Name = "a234567890123456789012345678901234567890123456789012345" }),
			want: []want{{"metadata.name", invalid}}},
		{name: "job template selector forbidden", obj: cj(func(c *batchv1.CronJob) {
			c.Spec.JobTemplate.Spec.Selector = &metav1.LabelSelector{MatchLabels: appLabels}
		}), want: []want{{"spec.jobTemplate.spec.selector", invalid}}},
	})

	// A CronJob stored with TZ in its schedule (from an older server) may
	// keep one through updates; one without may not gain it.
	withTZ := cj(func(c *batchv1.CronJob) { c.Spec.Schedule = "TZ=Europe/Paris 0 * * * *"; c.ResourceVersion = "1" })
	plain := cj(func(c *batchv1.CronJob) { c.ResourceVersion = "1" })
	runUpdate(t, []updateCase{
		{name: "keeps TZ", old: withTZ, new: cj(func(c *batchv1.CronJob) { c.Spec.Schedule = "TZ=Europe/Paris 30 * * * *"; c.ResourceVersion = "1" })},
		{name: "gains TZ", old: plain, new: withTZ, want: []want{{"spec.schedule", invalid}}},
		{name: "drops TZ", old: withTZ, new: plain},
		// As Kubernetes' validateScheduleFormat: a kept TZ may not be joined by timeZone.
		{name: "keeps TZ and gains timeZone", old: withTZ, new: cj(func(c *batchv1.CronJob) {
			c.Spec.Schedule = "TZ=Europe/Paris 0 * * * *"
			c.Spec.TimeZone = tz("Europe/Paris")
			c.ResourceVersion = "1"
		}), want: []want{{"spec.schedule", invalid}}},
	})

	// As Kubernetes' validateCronJobSpec, a time zone is checked when set or
	// changed, so a CronJob stored with one this server does not know (older
	// tzdata) can still be edited, suspended or deleted; the controller tells
	// of it with UnknownTimeZone.
	unknownTZ := cj(func(c *batchv1.CronJob) { c.Spec.TimeZone = tz("Mars/Olympus"); c.ResourceVersion = "1" })
	suspended := unknownTZ.DeepCopy()
	yes := true
	suspended.Spec.Suspend = &yes
	runUpdate(t, []updateCase{
		{name: "stored unknown time zone kept", old: unknownTZ, new: suspended},
		{name: "unknown time zone set", old: plain, new: unknownTZ, want: []want{{"spec.timeZone", invalid}}},
	})

	// The 52-character name limit is Kubernetes' create rule only, so a
	// CronJob stored with a longer name can still be updated (its finalizers
	// removed, say).
	longName := cj(func(c *batchv1.CronJob) {
		c.Name = "a234567890123456789012345678901234567890123456789012345"
		c.ResourceVersion = "1"
	})
	longSuspended := longName.DeepCopy()
	longSuspended.Spec.Suspend = &yes
	runUpdate(t, []updateCase{{name: "stored long name", old: longName, new: longSuspended}})

	// The status subresource does not judge the CronJob again, as in
	// Kubernetes (cronJobStatusStrategy validates nothing): the controller's
	// status writes of a CronJob stored before a rule tightened go through.
	withStatus := unknownTZ.DeepCopy()
	withStatus.Status.LastScheduleTime = &metav1.Time{}
	expectErrors(t, ValidateStatusUpdate(withStatus, unknownTZ), nil)
}

// Time zone errors read as Kubernetes' validateTimeZone words them.
func TestCronJobTimeZoneMessages(t *testing.T) {
	for tz, want := range map[string]string{
		"":             "timeZone must be nil or non-empty string",
		"Local":        "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
		"Mars/Olympus": "unknown time zone Mars/Olympus",
		"Europe/../x":  "unknown time zone Europe/../x",
	} {
		cj := &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "default"},
			Spec: batchv1.CronJobSpec{
				Schedule: "*/5 * * * *", TimeZone: &tz,
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: template()}},
			},
		}
		cj.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		var got []string
		for _, e := range Validate(defaulted(cj)) {
			if e.Field == "spec.timeZone" {
				got = append(got, e.Detail)
			}
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("timeZone %q: details %q, want %q", tz, got, want)
		}
	}
}

// A workload's template is held to the pods' pod-deletion-cost rule, so the
// mistake is refused where it is written; a template stored with a bad
// value before the rule may keep it.
func TestTemplateDeletionCost(t *testing.T) {
	withCost := func(v string) *appsv1.Deployment {
		return deploymentWith(func(d *appsv1.Deployment) {
			d.Spec.Template.Annotations = map[string]string{corev1.PodDeletionCost: v}
		})
	}
	const path = "spec.template.metadata.annotations[controller.kubernetes.io/pod-deletion-cost]"
	runCreate(t, []testCase{
		{name: "valid cost", obj: withCost("-3")},
		{name: "invalid cost", obj: withCost("03"), want: []want{{path, invalid}}},
	})
	stored := func(v string) *appsv1.Deployment {
		d := withCost(v)
		d.ResourceVersion, d.UID, d.Generation = "5", "uid-1", 1
		return d
	}
	runUpdate(t, []updateCase{
		{name: "invalid cost set later", old: stored("1"), new: stored("one"), want: []want{{path, invalid}}},
		{name: "stored invalid cost kept", old: stored("one"), new: stored("two")},
	})
}

func validRC() *corev1.ReplicationController {
	tpl := template()
	return &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       corev1.ReplicationControllerSpec{Selector: map[string]string{"app": "web"}, Template: &tpl},
	}
}

func rcWith(mutate func(*corev1.ReplicationController)) *corev1.ReplicationController {
	rc := validRC()
	mutate(rc)
	return defaulted(rc)
}

// The rules of Kubernetes' ValidateReplicationController, after defaulting
// (which fills an absent selector from the template's labels).
func TestValidateReplicationController(t *testing.T) {
	runCreate(t, []testCase{
		{name: "valid", obj: defaulted(validRC())},
		{name: "selector defaulted from the template", obj: rcWith(func(rc *corev1.ReplicationController) { rc.Spec.Selector = nil })},
		{name: "no selector and unlabelled template", obj: rcWith(func(rc *corev1.ReplicationController) {
			rc.Spec.Selector = nil
			rc.Spec.Template.Labels = nil
		}), want: []want{{"spec.selector", required}}},
		{name: "selector must match template", obj: rcWith(func(rc *corev1.ReplicationController) { rc.Spec.Selector = map[string]string{"app": "other"} }),
			want: []want{{"spec.template.metadata.labels", invalid}}},
		{name: "template required", obj: rcWith(func(rc *corev1.ReplicationController) { rc.Spec.Template = nil }),
			want: []want{{"spec.template", required}}},
		{name: "negative replicas", obj: rcWith(func(rc *corev1.ReplicationController) { rc.Spec.Replicas = i32(-1) }),
			want: []want{{"spec.replicas", invalid}}},
		{name: "zero replicas", obj: rcWith(func(rc *corev1.ReplicationController) { rc.Spec.Replicas = i32(0) })},
		{name: "negative minReadySeconds", obj: rcWith(func(rc *corev1.ReplicationController) { rc.Spec.MinReadySeconds = -1 }),
			want: []want{{"spec.minReadySeconds", invalid}}},
		{name: "restartPolicy must be Always", obj: rcWith(func(rc *corev1.ReplicationController) {
			rc.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		}),
			want: []want{{"spec.template.spec.restartPolicy", notSupported}}},
		{name: "no activeDeadlineSeconds", obj: rcWith(func(rc *corev1.ReplicationController) { rc.Spec.Template.Spec.ActiveDeadlineSeconds = ptrInt64(10) }),
			want: []want{{"spec.template.spec.activeDeadlineSeconds", forbidden}}},
		{name: "template pod spec checked", obj: rcWith(func(rc *corev1.ReplicationController) { rc.Spec.Template.Spec.Containers = nil }),
			want: []want{{"spec.template.spec.containers", required}}},
		{name: "a read-write GCE disk only for one replica", obj: rcWith(func(rc *corev1.ReplicationController) {
			rc.Spec.Replicas = i32(2)
			rc.Spec.Template.Spec.Volumes = []corev1.Volume{
				{Name: "ro", VolumeSource: corev1.VolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "a", ReadOnly: true}}},
				{Name: "rw", VolumeSource: corev1.VolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "b"}}},
			}
		}), want: []want{{"spec.template.spec.volumes[1].gcePersistentDisk.readOnly", invalid}}},
		{name: "a read-write GCE disk with one replica", obj: rcWith(func(rc *corev1.ReplicationController) {
			rc.Spec.Replicas = i32(1)
			rc.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "rw", VolumeSource: corev1.VolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "b"}}}}
		})},
		{name: "template deletion cost checked", obj: rcWith(func(rc *corev1.ReplicationController) {
			rc.Spec.Template.Annotations = map[string]string{corev1.PodDeletionCost: "x"}
		}), want: []want{{"spec.template.metadata.annotations[controller.kubernetes.io/pod-deletion-cost]", invalid}}},
	})

	old := stored(defaulted(validRC()))
	newSel := old.DeepCopy()
	newSel.Spec.Selector = map[string]string{"app": "web", "v": "2"}
	newSel.Spec.Template.Labels = map[string]string{"app": "web", "v": "2"}
	badSel := old.DeepCopy()
	badSel.Spec.Selector = map[string]string{"app": "other"}
	runUpdate(t, []updateCase{
		{name: "selector may change", old: old, new: newSel},
		{name: "updated selector must match template", old: old, new: badSel, want: []want{{"spec.template.metadata.labels", invalid}}},
	})
}

func ptrInt64(v int64) *int64 { return &v }
