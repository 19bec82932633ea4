package agent

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestInsufficientResource(t *testing.T) {
	requesting := func(rl corev1.ResourceList) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: rl}}}}}
	}
	q := resource.MustParse
	allocatable := corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("1Gi"), corev1.ResourcePods: q("10"), "example.com/gpu": q("1")}
	others := []*corev1.Pod{requesting(corev1.ResourceList{corev1.ResourceMemory: q("768Mi"), "example.com/gpu": q("1")})}
	tests := []struct {
		name            string
		pod             *corev1.Pod
		reason, message string
	}{
		{"fits", requesting(corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("256Mi")}), "", ""},
		{"no requests", requesting(nil), "", ""},
		{"memory", requesting(corev1.ResourceList{corev1.ResourceMemory: q("512Mi")}), "OutOfmemory",
			"Node didn't have enough resource: memory, requested: 536870912, used: 805306368, capacity: 1073741824"},
		{"cpu is reported before memory", requesting(corev1.ResourceList{corev1.ResourceCPU: q("2500m"), corev1.ResourceMemory: q("512Mi")}), "OutOfcpu",
			"Node didn't have enough resource: cpu, requested: 2500, used: 0, capacity: 2000"},
		{"an extended resource in use", requesting(corev1.ResourceList{"example.com/gpu": q("1")}), "OutOfexample.com/gpu",
			"Node didn't have enough resource: example.com/gpu, requested: 1, used: 1, capacity: 1"},
		{"an extended resource the node lacks is not checked", requesting(corev1.ResourceList{"example.com/fpga": q("1")}), "", ""},
		{"huge pages the node lacks", requesting(corev1.ResourceList{"hugepages-2Mi": q("2Mi")}), "OutOfhugepages-2Mi",
			"Node didn't have enough resource: hugepages-2Mi, requested: 2097152, used: 0, capacity: 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reason, message := insufficientResource(tc.pod, others, allocatable)
			if reason != tc.reason || message != tc.message {
				t.Fatalf("got %q %q, want %q %q", reason, message, tc.reason, tc.message)
			}
		})
	}
}
