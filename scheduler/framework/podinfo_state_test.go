package framework

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func podRequesting(cpu string) *v1.Pod {
	return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)},
	}}}}}
}

func TestPodRequestsForUsesTheRecordedPodInfoOnlyForItsPod(t *testing.T) {
	pod, other := podRequesting("1"), podRequesting("2")
	state := NewCycleState()
	if got := PodRequestsFor(state, pod).MilliCPU; got != 1000 {
		t.Fatalf("nothing recorded: PodRequestsFor = %dm, want 1000m", got)
	}
	pi := NewPodInfo(pod)
	state.WritePodInfo(pi)
	if PodRequestsFor(state, pod) != pi.Requests || PodNonZeroRequestsFor(state, pod) != pi.NonZeroRequests {
		t.Fatal("the recorded PodInfo's requests were not used for its pod")
	}
	if got := PodRequestsFor(state, other).MilliCPU; got != 2000 {
		t.Fatalf("another pod: PodRequestsFor = %dm, want its own 2000m", got)
	}
	// Memory unset: the non-zero form fills in the scoring default.
	if got := PodNonZeroRequestsFor(state, other).Memory; got != DefaultMemoryRequest {
		t.Fatalf("another pod: PodNonZeroRequestsFor memory = %d, want %d", got, DefaultMemoryRequest)
	}
}
