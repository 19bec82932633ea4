package agent

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// specPod is a pod with an init container that completed, a sidecar, and
// two app containers: one with resources and mounts (one read-only, as
// the service account token's, one asking for a recursive read-only mount
// if possible), one with neither; state is its runtime's report, the
// second app container not created yet.
func specPod() (*corev1.Pod, PodState) {
	started := metav1.NewTime(time.Date(2026, 11, 30, 13, 40, 44, 0, time.UTC))
	always := corev1.ContainerRestartPolicyAlways
	ifPossible := corev1.RecursiveReadOnlyIfPossible
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Name: "setup", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}}},
				{Name: "proxy", Image: "envoy", RestartPolicy: &always},
			},
			Containers: []corev1.Container{
				{Name: "app", Image: "nginx", Resources: res, VolumeMounts: []corev1.VolumeMount{
					{Name: "data", MountPath: "/data"},
					{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
					{Name: "config", MountPath: "/etc/app", ReadOnly: true, RecursiveReadOnly: &ifPossible},
				}},
				{Name: "late", Image: "busybox"},
			},
		},
	}
	running := func(name, image string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Image: image, ContainerID: "fake://uid-p/" + name, Ready: true, Started: new(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}
	}
	state := PodState{
		InitContainers: []corev1.ContainerStatus{
			{Name: "setup", Image: "busybox", ContainerID: "fake://uid-p/setup", Started: new(bool),
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: started, FinishedAt: started, ContainerID: "fake://uid-p/setup"}}},
			running("proxy", "envoy"),
		},
		Containers: []corev1.ContainerStatus{
			running("app", "nginx"),
			{Name: "late", Image: "busybox", Started: new(bool), State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}},
		},
	}
	return pod, state
}

// As a v1.33 kubelet with InPlacePodVerticalScaling off, as skiff's API
// (no pods/resize, container resources immutable): no container status
// reports resources or allocatedResources, nor user, which no runtime of
// skiff's reports.
func TestContainerStatusesCarryNoResources(t *testing.T) {
	pod, state := specPod()
	st := computeStatus(pod, state, "10.0.0.5", "192.168.1.10", time.Now(), false)
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"resources"`, `"allocatedResources"`, `"user"`} {
		if strings.Contains(string(raw), field) {
			t.Errorf("status written as %s; want no %s", raw, field)
		}
	}
}

// As the v1.33 kubelet (RecursiveReadOnlyMounts, GA): every container's
// status lists its mounts, whether the runtime has created it or not; a
// read-only one is not recursively read-only on a runtime that cannot
// make it so (IfPossible falls back to Disabled).
func TestContainerStatusesReportTheirVolumeMounts(t *testing.T) {
	pod, state := specPod()
	st := computeStatus(pod, state, "10.0.0.5", "192.168.1.10", time.Now(), false)
	disabled := corev1.RecursiveReadOnlyDisabled
	want := []corev1.VolumeMountStatus{
		{Name: "data", MountPath: "/data"},
		{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true, RecursiveReadOnly: &disabled},
		{Name: "config", MountPath: "/etc/app", ReadOnly: true, RecursiveReadOnly: &disabled},
	}
	if got := findStatus(st.ContainerStatuses, "app").VolumeMounts; !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("app's volumeMounts %+v, want %+v", got, want)
	}
	late := pod.Spec.Containers[1]
	late.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/in"}}
	pod.Spec.Containers[1] = late
	st = computeStatus(pod, state, "10.0.0.5", "192.168.1.10", time.Now(), false)
	if got := findStatus(st.ContainerStatuses, "late").VolumeMounts; !equality.Semantic.DeepEqual(got, []corev1.VolumeMountStatus{{Name: "data", MountPath: "/in"}}) {
		t.Errorf("volumeMounts of a container not created yet %+v, want its one mount", got)
	}
	if got := findStatus(st.InitContainerStatuses, "setup").VolumeMounts; got != nil {
		t.Errorf("volumeMounts of a container without mounts %+v, want none", got)
	}
}

// Once written and read back, a status with the spec's fields compares
// equal to the next one computed, so a resync writes nothing; and the
// stored mounts are reused rather than built again.
func TestStatusFromTheSpecIsStableAcrossAWrite(t *testing.T) {
	pod, state := specPod()
	now := time.Now()
	raw, err := json.Marshal(computeStatus(pod, state, "10.0.0.5", "192.168.1.10", now, false))
	if err != nil {
		t.Fatal(err)
	}
	written := pod.DeepCopy()
	if err := json.Unmarshal(raw, &written.Status); err != nil {
		t.Fatal(err)
	}
	_, again := specPod()
	next := computeStatus(written, again, "10.0.0.5", "192.168.1.10", now, false)
	if !statusEqual(&written.Status, next) {
		t.Fatal("the status read back differs from the next one computed: every resync would write")
	}
	stored := findStatus(written.Status.ContainerStatuses, "app").VolumeMounts
	got := findStatus(next.ContainerStatuses, "app").VolumeMounts
	if len(stored) == 0 || len(got) == 0 {
		t.Fatalf("volumeMounts written %v, computed next %v; want the app's three", stored, got)
	}
	if &got[0] != &stored[0] {
		t.Error("the stored volumeMounts were built again rather than reused")
	}
}

// finalStopper stops pods as its runtime reported them (PodStopper).
type finalStopper struct {
	killRuntime
	state PodState
}

func (r finalStopper) StopPod(context.Context, *corev1.Pod, time.Duration) (PodState, error) {
	return r.state, nil
}

// The terminal statuses written from how the runtime stopped the
// containers (PodStopper) — a deleted pod's, one failed past its active
// deadline — carry the spec's fields too, as every status the kubelet
// writes. The pod's status before has none (an older agent wrote it).
func TestFinalStatusesReportTheSpecFields(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(*Agent, *corev1.Pod) error
	}{
		{"deleted", func(a *Agent, pod *corev1.Pod) error {
			now := metav1.Now()
			pod.DeletionTimestamp = &now
			return a.terminate(context.Background(), "ns/p", pod)
		}},
		{"past its deadline", func(a *Agent, pod *corev1.Pod) error {
			return a.failPastDeadline(context.Background(), "ns/p", pod)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, state := specPod()
			pod.Spec.NodeName = "n"
			pod.Status = *computeStatus(pod, state, "10.0.0.5", "192.0.2.1", time.Now(), false)
			for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
				for i := range list {
					list[i].VolumeMounts = nil
				}
			}
			client := fake.NewClientset(pod)
			a, err := New(client, finalStopper{state: state}, Config{NodeName: "n", Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.end(a, pod); err != nil {
				t.Fatal(err)
			}
			var final *corev1.Pod
			for _, act := range client.Actions() {
				if u, ok := act.(k8stesting.UpdateAction); ok && act.GetSubresource() == "status" {
					final = u.GetObject().(*corev1.Pod)
				}
			}
			if final == nil {
				t.Fatal("no status written")
			}
			if s := findStatus(final.Status.ContainerStatuses, "app"); len(s.VolumeMounts) != 3 {
				t.Errorf("app's final status: volumeMounts %v, want the spec's three", s.VolumeMounts)
			}
		})
	}
}
