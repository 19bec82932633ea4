package agent

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
