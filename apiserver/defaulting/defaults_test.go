package defaulting

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func minimalPodSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}
}

// checkPodSpecDefaults asserts the defaults every pod spec, pod or template, gains.
func checkPodSpecDefaults(t *testing.T, s *corev1.PodSpec) {
	t.Helper()
	if s.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("restartPolicy = %q, want Always", s.RestartPolicy)
	}
	if s.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("dnsPolicy = %q, want ClusterFirst", s.DNSPolicy)
	}
	if s.TerminationGracePeriodSeconds == nil || *s.TerminationGracePeriodSeconds != 30 {
		t.Errorf("terminationGracePeriodSeconds = %v, want 30", s.TerminationGracePeriodSeconds)
	}
	if s.SchedulerName != "default-scheduler" {
		t.Errorf("schedulerName = %q", s.SchedulerName)
	}
	if s.SecurityContext == nil {
		t.Error("securityContext not defaulted to {}")
	}
	c := s.Containers[0]
	if c.TerminationMessagePath != "/dev/termination-log" || c.TerminationMessagePolicy != corev1.TerminationMessageReadFile {
		t.Errorf("termination message = %q/%q", c.TerminationMessagePath, c.TerminationMessagePolicy)
	}
	if c.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("imagePullPolicy for untagged image = %q, want Always", c.ImagePullPolicy)
	}
}

func TestMinimalPodGainsDefaults(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: minimalPodSpec()}
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}}
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
	pod.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "scratch"},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}},
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}}},
	}
	Default(pod)
	checkPodSpecDefaults(t, &pod.Spec)
	if pod.Spec.EnableServiceLinks == nil || !*pod.Spec.EnableServiceLinks {
		t.Error("enableServiceLinks not defaulted to true")
	}
	c := pod.Spec.Containers[0]
	if c.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("port protocol = %q", c.Ports[0].Protocol)
	}
	if got := c.Resources.Requests[corev1.ResourceCPU]; got.String() != "500m" {
		t.Errorf("cpu request = %s, want the limit 500m", got.String())
	}
	p := c.LivenessProbe
	if p.TimeoutSeconds != 1 || p.PeriodSeconds != 10 || p.SuccessThreshold != 1 || p.FailureThreshold != 3 {
		t.Errorf("probe defaults = %d/%d/%d/%d", p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold)
	}
	if p.HTTPGet.Path != "/" || p.HTTPGet.Scheme != corev1.URISchemeHTTP {
		t.Errorf("httpGet defaults = %q %q", p.HTTPGet.Path, p.HTTPGet.Scheme)
	}
	v := pod.Spec.Volumes
	if v[0].EmptyDir == nil {
		t.Error("source-less volume did not become emptyDir")
	}
	if *v[1].ConfigMap.DefaultMode != 0o644 || *v[2].Secret.DefaultMode != 0o644 {
		t.Error("configMap/secret defaultMode not 0644")
	}
	if v[3].HostPath.Type == nil || *v[3].HostPath.Type != corev1.HostPathUnset {
		t.Error("hostPath type not defaulted to \"\"")
	}
}

func TestPodTemplateDoesNotGainPodOnlyDefaults(t *testing.T) {
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: minimalPodSpec()}}}
	d.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
	Default(d)
	if d.Spec.Template.Spec.EnableServiceLinks != nil {
		t.Error("template gained enableServiceLinks, which Kubernetes sets on pods only")
	}
	if len(d.Spec.Template.Spec.Containers[0].Resources.Requests) != 0 {
		t.Error("template gained requests from limits, which Kubernetes does on pods only")
	}
}

func TestImagePullPolicy(t *testing.T) {
	for image, want := range map[string]corev1.PullPolicy{
		"nginx":                         corev1.PullAlways,
		"nginx:latest":                  corev1.PullAlways,
		"nginx:1.27":                    corev1.PullIfNotPresent,
		"registry:5000/app":             corev1.PullAlways,
		"registry:5000/app:v2":          corev1.PullIfNotPresent,
		"registry:5000/app:latest":      corev1.PullAlways,
		"nginx@sha256:0123456789abcdef": corev1.PullIfNotPresent,
	} {
		if got := pullPolicyFor(image); got != want {
			t.Errorf("pullPolicyFor(%q) = %q, want %q", image, got, want)
		}
	}
}

func TestMinimalDeploymentGainsDefaults(t *testing.T) {
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: minimalPodSpec()}}}
	Default(d)
	s := d.Spec
	if *s.Replicas != 1 || *s.RevisionHistoryLimit != 10 || *s.ProgressDeadlineSeconds != 600 {
		t.Errorf("replicas/revisionHistoryLimit/progressDeadline = %d/%d/%d", *s.Replicas, *s.RevisionHistoryLimit, *s.ProgressDeadlineSeconds)
	}
	if s.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType ||
		s.Strategy.RollingUpdate.MaxSurge.String() != "25%" || s.Strategy.RollingUpdate.MaxUnavailable.String() != "25%" {
		t.Errorf("strategy = %+v", s.Strategy)
	}
	checkPodSpecDefaults(t, &s.Template.Spec)
}

func TestRecreateDeploymentGetsNoRollingUpdate(t *testing.T) {
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}}}
	Default(d)
	if d.Spec.Strategy.RollingUpdate != nil {
		t.Error("Recreate deployment gained rollingUpdate parameters")
	}
}

func TestMinimalServiceGainsDefaults(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"},
		Ports:    []corev1.ServicePort{{Port: 80}, {Port: 443, TargetPort: intstr.FromString("https")}},
	}}
	Default(svc)
	s := svc.Spec
	if s.Type != corev1.ServiceTypeClusterIP || s.SessionAffinity != corev1.ServiceAffinityNone {
		t.Errorf("type/sessionAffinity = %q/%q", s.Type, s.SessionAffinity)
	}
	if s.Ports[0].Protocol != corev1.ProtocolTCP || s.Ports[0].TargetPort != intstr.FromInt32(80) {
		t.Errorf("port 0 = %+v", s.Ports[0])
	}
	if s.Ports[1].TargetPort != intstr.FromString("https") {
		t.Errorf("named targetPort overwritten: %+v", s.Ports[1].TargetPort)
	}
	if *s.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack || *s.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyCluster {
		t.Error("ipFamilyPolicy/internalTrafficPolicy not defaulted")
	}
	if s.ExternalTrafficPolicy != "" {
		t.Error("ClusterIP service gained externalTrafficPolicy")
	}
}

func TestNodePortServiceGainsExternalTrafficPolicy(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	Default(svc)
	if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster || svc.Spec.AllocateLoadBalancerNodePorts == nil {
		t.Errorf("spec = %+v", svc.Spec)
	}
}

func TestWorkloadDefaults(t *testing.T) {
	ss := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{}}}}
	Default(ss)
	if *ss.Spec.Replicas != 1 || ss.Spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement ||
		ss.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType || *ss.Spec.UpdateStrategy.RollingUpdate.Partition != 0 ||
		*ss.Spec.RevisionHistoryLimit != 10 || ss.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType ||
		ss.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("statefulset spec = %+v", ss.Spec)
	}
	if *ss.Spec.VolumeClaimTemplates[0].Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Error("volumeClaimTemplate volumeMode not Filesystem")
	}

	ds := &appsv1.DaemonSet{}
	Default(ds)
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || *ru.MaxUnavailable != intstr.FromInt32(1) || *ru.MaxSurge != intstr.FromInt32(0) || *ds.Spec.RevisionHistoryLimit != 10 {
		t.Errorf("daemonset spec = %+v", ds.Spec)
	}

	rs := &appsv1.ReplicaSet{}
	Default(rs)
	if *rs.Spec.Replicas != 1 {
		t.Error("replicaset replicas not 1")
	}

	cj := &batchv1.CronJob{}
	Default(cj)
	if cj.Spec.ConcurrencyPolicy != batchv1.AllowConcurrent || *cj.Spec.Suspend || *cj.Spec.SuccessfulJobsHistoryLimit != 3 || *cj.Spec.FailedJobsHistoryLimit != 1 {
		t.Errorf("cronjob spec = %+v", cj.Spec)
	}
}

func TestJobCompletionsAndParallelism(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	tests := []struct {
		name                       string
		completions, parallelism   *int32
		wantCompletions, wantParal *int32
	}{
		{"neither set runs one pod once", nil, nil, i32(1), i32(1)},
		{"completions only gets parallelism 1", i32(5), nil, i32(5), i32(1)},
		{"parallelism only is a work queue", nil, i32(3), nil, i32(3)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := &batchv1.Job{Spec: batchv1.JobSpec{Completions: tc.completions, Parallelism: tc.parallelism}}
			Default(j)
			if !equality.Semantic.DeepEqual(j.Spec.Completions, tc.wantCompletions) || !equality.Semantic.DeepEqual(j.Spec.Parallelism, tc.wantParal) {
				t.Errorf("completions/parallelism = %v/%v", j.Spec.Completions, j.Spec.Parallelism)
			}
			if *j.Spec.BackoffLimit != 6 || *j.Spec.CompletionMode != batchv1.NonIndexedCompletion || *j.Spec.Suspend ||
				*j.Spec.PodReplacementPolicy != batchv1.TerminatingOrFailed {
				t.Errorf("job spec = %+v", j.Spec)
			}
		})
	}
}

func TestJobSelectorGeneratedFromUID(t *testing.T) {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi", UID: "u-1"}}
	Default(j)
	if j.Spec.Selector == nil || j.Spec.Selector.MatchLabels[JobControllerUIDLabel] != "u-1" {
		t.Fatalf("selector = %+v", j.Spec.Selector)
	}
	if j.Spec.Template.Labels[JobNameLabel] != "pi" || j.Spec.Template.Labels[JobControllerUIDLabel] != "u-1" {
		t.Errorf("template labels = %v", j.Spec.Template.Labels)
	}

	manual := true
	m := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "m", UID: "u-2"}, Spec: batchv1.JobSpec{ManualSelector: &manual}}
	Default(m)
	if m.Spec.Selector != nil {
		t.Error("manualSelector job got a generated selector")
	}
}

func TestOtherKinds(t *testing.T) {
	sec := &corev1.Secret{}
	Default(sec)
	if sec.Type != corev1.SecretTypeOpaque {
		t.Errorf("secret type = %q", sec.Type)
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	Default(ns)
	if ns.Labels[corev1.LabelMetadataName] != "team-a" {
		t.Errorf("namespace labels = %v", ns.Labels)
	}

	rb := &rbacv1.RoleBinding{Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}, {Kind: "Group", Name: "devs"}, {Kind: "ServiceAccount", Name: "sa", Namespace: "x"}}}
	Default(rb)
	if rb.Subjects[0].APIGroup != rbacv1.GroupName || rb.Subjects[1].APIGroup != rbacv1.GroupName || rb.Subjects[2].APIGroup != "" || rb.RoleRef.APIGroup != rbacv1.GroupName {
		t.Errorf("rolebinding = %+v", rb)
	}

	pc := &schedulingv1.PriorityClass{}
	Default(pc)
	if *pc.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Errorf("preemptionPolicy = %v", *pc.PreemptionPolicy)
	}

	es := &discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{}}}
	Default(es)
	if *es.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Error("endpointslice port protocol not TCP")
	}
}

func TestDefaultIsIdempotentAndIgnoresUnknownTypes(t *testing.T) {
	objs := []runtime.Object{
		&corev1.Pod{Spec: minimalPodSpec()},
		&appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: minimalPodSpec()}}},
		&corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", UID: "u"}},
	}
	for _, obj := range objs {
		Default(obj)
		once := obj.DeepCopyObject()
		Default(obj)
		if !equality.Semantic.DeepEqual(once, obj) {
			t.Errorf("second Default changed %T", obj)
		}
	}
	Default(&metav1.Status{}) // must not panic
	Default(nil)
}

func TestJobLabels(t *testing.T) {
	unlabelled := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi", UID: "u-1"}}
	Default(unlabelled)
	if unlabelled.Labels[JobControllerUIDLabel] != "u-1" || unlabelled.Labels[JobNameLabel] != "pi" {
		t.Errorf("unlabelled job labels = %v, want the generated pod labels", unlabelled.Labels)
	}
	labelled := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi", UID: "u-1"}}
	labelled.Spec.Template.Labels = map[string]string{"app": "pi"}
	Default(labelled)
	if len(labelled.Labels) != 1 || labelled.Labels["app"] != "pi" {
		t.Errorf("labelled job labels = %v, want only the user's", labelled.Labels)
	}
}

func TestLimitRangeDefaults(t *testing.T) {
	lr := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer,
		Max:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Min:  corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}}}}
	Default(lr)
	item := lr.Spec.Limits[0]
	if q := item.Default[corev1.ResourceCPU]; q.String() != "2" {
		t.Errorf("default cpu = %s, want the max 2", q.String())
	}
	if q := item.DefaultRequest[corev1.ResourceCPU]; q.String() != "2" {
		t.Errorf("defaultRequest cpu = %s, want the default 2", q.String())
	}
	if q := item.DefaultRequest[corev1.ResourceMemory]; q.String() != "64Mi" {
		t.Errorf("defaultRequest memory = %s, want the min 64Mi", q.String())
	}
}

func TestSecretStringDataFoldedIntoData(t *testing.T) {
	s := &corev1.Secret{Data: map[string][]byte{"a": []byte("old"), "b": []byte("keep")}, StringData: map[string]string{"a": "new"}}
	Default(s)
	if string(s.Data["a"]) != "new" || string(s.Data["b"]) != "keep" || s.StringData != nil {
		t.Errorf("secret = %+v", s)
	}
}

func TestResourceQuantitiesRoundedToMilli(t *testing.T) {
	pod := &corev1.Pod{Spec: minimalPodSpec()}
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.0001")}
	Default(pod)
	if q := pod.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]; q.String() != "1m" {
		t.Errorf("cpu limit = %s, want 1m", q.String())
	}
}
