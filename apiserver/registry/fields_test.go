package registry

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// TestTypedFieldSetMatchesUnstructured requires the field sets read by
// reflection to equal the ones rendered from the unstructured conversion,
// including zero values the conversion omits, and the fallback to the
// conversion for fields it does not read (an event's source).
func TestTypedFieldSetMatchesUnstructured(t *testing.T) {
	podFields := []string{"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"}
	cases := []struct {
		name     string
		obj      runtime.Object
		paths    []string
		fallback bool
	}{
		{"empty pod", &corev1.Pod{}, podFields, false},
		{"bound pod", &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1", RestartPolicy: corev1.RestartPolicyAlways, SchedulerName: "default-scheduler",
			ServiceAccountName: "default", HostNetwork: true}, Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", NominatedNodeName: "n2"}}, podFields, false},
		{"node", &corev1.Node{Spec: corev1.NodeSpec{Unschedulable: true}}, []string{"spec.unschedulable"}, false},
		{"schedulable node", &corev1.Node{}, []string{"spec.unschedulable"}, false},
		{"namespace", &corev1.Namespace{Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}, []string{"status.phase"}, false},
		{"secret", &corev1.Secret{Type: corev1.SecretTypeOpaque}, []string{"type"}, false},
		// JobStatus has no "successful": not found, left to the conversion.
		{"job", &batchv1.Job{Status: batchv1.JobStatus{Succeeded: 3}}, []string{"status.successful"}, true},
		{"job none succeeded", &batchv1.Job{}, []string{"status.succeeded"}, false},
		{"job succeeded", &batchv1.Job{Status: batchv1.JobStatus{Succeeded: 3}}, []string{"status.succeeded"}, false},
		{"events.k8s.io event", &eventsv1.Event{Reason: "Started", Type: "Normal", ReportingController: "kubelet",
			Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p", UID: "u1"}},
			[]string{"reason", "type", "reportingController", "regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid"}, false},
		{"core event", &corev1.Event{Reason: "Pulled", Source: corev1.EventSource{Component: "kubelet"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", ResourceVersion: "7"}, EventTime: metav1.MicroTime{}},
			[]string{"involvedObject.kind", "involvedObject.name", "involvedObject.resourceVersion", "reason", "source", "type"}, true},
		// A list is not a scalar: left to the conversion.
		{"list leaf", &corev1.Pod{Spec: corev1.PodSpec{DNSConfig: &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}}}},
			[]string{"spec.dnsConfig.nameservers"}, true},
		{"pointers", &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}}},
			[]string{"spec.securityContext.runAsUser", "spec.securityContext.runAsGroup", "spec.priority"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			want := fields.Set{}
			for _, p := range tc.paths {
				want[p] = fieldString(content, strings.Split(p, "."))
			}
			values, ok := typedFields(tc.obj, tc.paths)
			if ok == tc.fallback {
				t.Fatalf("read by reflection: %v, want %v", ok, !tc.fallback)
			}
			if !ok {
				return
			}
			got := fields.Set{}
			for i, p := range tc.paths {
				got[p] = values[i]
			}
			if got.String() != want.String() {
				t.Fatalf("field set %v, want %v", got, want)
			}
		})
	}
}

// A Job's field label status.successful is Kubernetes': it reads
// status.succeeded, and a Job with none succeeded has "0", typed or
// unstructured.
func TestJobStatusSuccessfulSelector(t *testing.T) {
	var jobs *Resource
	for _, r := range Builtins(Hooks{}, nil) {
		if r.Group == "batch" && r.Name == "jobs" {
			jobs = r
		}
	}
	cases := []struct {
		succeeded int32
		selector  string
		want      bool
	}{
		{1, "status.successful=1", true},
		{2, "status.successful=1", false},
		{0, "status.successful=1", false},
		{0, "status.successful=0", true},
		{0, "status.successful!=0", false},
		{3, "status.successful!=0", true},
	}
	for _, tc := range cases {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "n"}, Status: batchv1.JobStatus{Succeeded: tc.succeeded}}
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(job)
		if err != nil {
			t.Fatal(err)
		}
		sel, err := fields.ParseSelector(tc.selector)
		if err != nil {
			t.Fatal(err)
		}
		if err := jobs.CheckFieldSelector(sel); err != nil {
			t.Fatalf("%s: %v", tc.selector, err)
		}
		for _, obj := range []runtime.Object{job, &unstructured.Unstructured{Object: content}} {
			set, err := jobs.FieldSet(obj)
			if err != nil {
				t.Fatal(err)
			}
			if got := sel.Matches(set); got != tc.want {
				t.Errorf("%T with succeeded=%d: %s matches %v (fields %v), want %v", obj, tc.succeeded, tc.selector, got, set, tc.want)
			}
		}
	}
}

// BenchmarkPodFieldSet measures the field set of a pod, built once per watch
// event for field-selected watchers (every kubelet's pod watch).
func BenchmarkPodFieldSet(b *testing.B) {
	var pods *Resource
	for _, r := range Builtins(Hooks{}, nil) {
		if r.Group == "" && r.Name == "pods" {
			pods = r
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "n"},
		Spec:   corev1.PodSpec{NodeName: "n1", RestartPolicy: corev1.RestartPolicyAlways, SchedulerName: "default-scheduler", ServiceAccountName: "default"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pods.FieldSet(pod); err != nil {
			b.Fatal(err)
		}
	}
}

// Field selectors match what Kubernetes' selectable field sets hold, not
// just the JSON: a pod without hostNetwork is spec.hostNetwork=false
// (PodToSelectableFields renders the bool), and a core Event's source is
// its source.component, else its reportingComponent (EventToSelectableFields),
// so events written through events.k8s.io/v1, which carry no source, match
// source=<their reporting controller>.
func TestSelectableFieldsAsKubernetes(t *testing.T) {
	byName := map[string]*Resource{}
	for _, r := range Builtins(Hooks{}, nil) {
		byName[r.Group+"/"+r.Name] = r
	}
	cases := []struct {
		res      string
		obj      runtime.Object
		selector string
		want     bool
	}{
		{"/pods", &corev1.Pod{}, "spec.hostNetwork=false", true},
		{"/pods", &corev1.Pod{}, "spec.hostNetwork!=true", true},
		{"/pods", &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: true}}, "spec.hostNetwork=false", false},
		{"/pods", &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: true}}, "spec.hostNetwork=true", true},
		{"/events", &corev1.Event{Source: corev1.EventSource{Component: "kubelet"}, ReportingController: "other"}, "source=kubelet", true},
		{"/events", &corev1.Event{ReportingController: "default-scheduler"}, "source=default-scheduler", true},
		{"/events", &corev1.Event{ReportingController: "default-scheduler"}, "reportingComponent=default-scheduler", true},
		{"/events", &corev1.Event{}, "source=", true},
		{"events.k8s.io/events", &eventsv1.Event{Regarding: corev1.ObjectReference{APIVersion: "v1", ResourceVersion: "7", FieldPath: "spec.containers{c}"}},
			"regarding.apiVersion=v1,regarding.resourceVersion=7,regarding.fieldPath=spec.containers{c}", true},
	}
	for _, tc := range cases {
		res := byName[tc.res]
		sel, err := fields.ParseSelector(tc.selector)
		if err != nil {
			t.Fatal(err)
		}
		if err := res.CheckFieldSelector(sel); err != nil {
			t.Errorf("%s %s: %v", tc.res, tc.selector, err)
			continue
		}
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tc.obj)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range []runtime.Object{tc.obj, &unstructured.Unstructured{Object: content}} {
			set, err := res.FieldSet(obj)
			if err != nil {
				t.Fatal(err)
			}
			if got := sel.Matches(set); got != tc.want {
				t.Errorf("%s %T: %s matches %v (fields %v), want %v", tc.res, obj, tc.selector, got, set, tc.want)
			}
		}
	}
}
