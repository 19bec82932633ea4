package agent

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A status computed from the runtime carries nanoseconds; once stored it
// has seconds. The two must compare equal, or every resync writes.
func TestStatusEqualAtTheAPIsPrecision(t *testing.T) {
	started := metav1.NewTime(time.Date(2026, 11, 30, 13, 40, 44, 123456789, time.UTC))
	finished := metav1.NewTime(started.Add(1500 * time.Millisecond))
	computed := &corev1.PodStatus{
		Phase:      corev1.PodRunning,
		StartTime:  &started,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: finished}},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name:                 "app",
			State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{StartedAt: started, FinishedAt: finished, ExitCode: 1}},
		}},
	}
	raw, err := json.Marshal(computed)
	if err != nil {
		t.Fatal(err)
	}
	var stored corev1.PodStatus
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	if !statusEqual(&stored, computed) {
		t.Fatal("a status differing only below the second compares unequal: the agent would rewrite it on every sync")
	}
	if computed.StartTime.Nanosecond() == 0 {
		t.Fatal("statusEqual changed its argument")
	}
	later := computed.DeepCopy()
	later.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(started.Add(time.Second))
	if statusEqual(&stored, later) {
		t.Fatal("a status one second later compares equal")
	}
}

// benchPod is a pod as a hollow node first sees it (bound, no status yet
// beyond PodScheduled) and the runtime's report of its one container.
func benchPod() (*corev1.Pod, PodState) {
	started := metav1.NewTime(time.Date(2026, 11, 30, 13, 40, 44, 123456789, time.UTC))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-1", Namespace: "bench", UID: "0f9e6c5a-4a8e-4a59-9d0c-6c1f3b1e2a7d", ResourceVersion: "1234"},
		Spec: corev1.PodSpec{NodeName: "hollow-0", Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(started.Add(-time.Second).Truncate(time.Second))}}},
	}
	state := PodState{Containers: []corev1.ContainerStatus{{Name: "app", Image: "registry.k8s.io/pause:3.10", ImageID: "fake://registry.k8s.io/pause:3.10",
		ContainerID: "fake://0f9e6c5a-4a8e-4a59-9d0c-6c1f3b1e2a7d/app", Ready: true, Started: new(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}}}
	return pod, state
}

// BenchmarkPodStatus is the status work of a pod's two syncs on a hollow
// node: the first computes a status that differs from the pod's (and is
// written), the second, after the write comes back by the watch, one that
// does not.
func BenchmarkPodStatus(b *testing.B) {
	pod, state := benchPod()
	now := state.Containers[0].State.Running.StartedAt.Time
	written := pod.DeepCopy()
	written.Status = *computeStatus(pod, state, "10.0.0.5", "192.168.1.10", now, false)
	raw, err := json.Marshal(written.Status)
	if err != nil {
		b.Fatal(err)
	}
	written.Status = corev1.PodStatus{}
	if err := json.Unmarshal(raw, &written.Status); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if statusEqual(&pod.Status, computeStatus(pod, state, "10.0.0.5", "192.168.1.10", now, false)) {
			b.Fatal("first sync: status unchanged")
		}
		if !statusEqual(&written.Status, computeStatus(written, state, "10.0.0.5", "192.168.1.10", now, false)) {
			b.Fatal("second sync: status changed")
		}
	}
}

// As the kubelet's status generation: a pod's reason and message belong to
// its phase. While the phase stays they are kept, whoever wrote them; when
// it changes they go.
func TestStatusKeepsReasonAndMessageWhileThePhaseStays(t *testing.T) {
	pod, state := benchPod()
	now := state.Containers[0].State.Running.StartedAt.Time
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Reason, pod.Status.Message = "Maintenance", "drained at 18:00"
	st := computeStatus(pod, state, "10.0.0.5", "192.168.1.10", now, false)
	if st.Phase != corev1.PodRunning || st.Reason != "Maintenance" || st.Message != "drained at 18:00" {
		t.Errorf("phase unchanged: phase %s reason %q message %q, want Running with the pod's reason and message", st.Phase, st.Reason, st.Message)
	}
	pod.Status.Phase = corev1.PodPending
	st = computeStatus(pod, state, "10.0.0.5", "192.168.1.10", now, false)
	if st.Phase != corev1.PodRunning || st.Reason != "" || st.Message != "" {
		t.Errorf("Pending to Running: phase %s reason %q message %q, want Running with neither", st.Phase, st.Reason, st.Message)
	}
}
