package qos

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func list(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func ctr(requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func TestClass(t *testing.T) {
	both := list("cpu", "1", "memory", "1Gi")
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want corev1.PodQOSClass
	}{
		{"nothing set", corev1.PodSpec{Containers: []corev1.Container{ctr(nil, nil)}}, corev1.PodQOSBestEffort},
		{"no containers", corev1.PodSpec{}, corev1.PodQOSBestEffort},
		{"only other resources", corev1.PodSpec{Containers: []corev1.Container{ctr(list("ephemeral-storage", "1Gi", "example.com/gpu", "1"), list("example.com/gpu", "1"))}}, corev1.PodQOSBestEffort},
		{"zero quantities", corev1.PodSpec{Containers: []corev1.Container{ctr(list("cpu", "0", "memory", "0"), list("cpu", "0"))}}, corev1.PodQOSBestEffort},
		{"requests equal limits", corev1.PodSpec{Containers: []corev1.Container{ctr(both, both)}}, corev1.PodQOSGuaranteed},
		{"limits alone", corev1.PodSpec{Containers: []corev1.Container{ctr(nil, both)}}, corev1.PodQOSBurstable},
		{"memory limit missing", corev1.PodSpec{Containers: []corev1.Container{ctr(list("cpu", "1"), list("cpu", "1"))}}, corev1.PodQOSBurstable},
		{"requests below limits", corev1.PodSpec{Containers: []corev1.Container{ctr(list("cpu", "500m", "memory", "1Gi"), both)}}, corev1.PodQOSBurstable},
		{"requests alone", corev1.PodSpec{Containers: []corev1.Container{ctr(list("memory", "1Gi"), nil)}}, corev1.PodQOSBurstable},
		{"one container short", corev1.PodSpec{Containers: []corev1.Container{ctr(both, both), ctr(nil, nil)}}, corev1.PodQOSBurstable},
		{"init container counts", corev1.PodSpec{InitContainers: []corev1.Container{ctr(list("cpu", "1"), nil)}, Containers: []corev1.Container{ctr(nil, nil)}}, corev1.PodQOSBurstable},
		{"init and main guaranteed", corev1.PodSpec{InitContainers: []corev1.Container{ctr(both, both)}, Containers: []corev1.Container{ctr(both, both)}}, corev1.PodQOSGuaranteed},
		{"pod level decides", corev1.PodSpec{Resources: &corev1.ResourceRequirements{Requests: both, Limits: both},
			Containers: []corev1.Container{ctr(list("cpu", "100m"), nil)}}, corev1.PodQOSGuaranteed},
		{"pod level burstable", corev1.PodSpec{Resources: &corev1.ResourceRequirements{Requests: list("cpu", "1")},
			Containers: []corev1.Container{ctr(both, both)}}, corev1.PodQOSBurstable},
		{"pod level without cpu or memory", corev1.PodSpec{Resources: &corev1.ResourceRequirements{Limits: list("hugepages-2Mi", "2Mi")},
			Containers: []corev1.Container{ctr(both, both)}}, corev1.PodQOSGuaranteed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: tc.spec}
			if got := Class(pod); got != tc.want {
				t.Errorf("Class = %s, want %s", got, tc.want)
			}
			if got := Of(pod); got != tc.want {
				t.Errorf("Of (no recorded class) = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestOfKeepsTheRecordedClass(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{ctr(nil, nil)}}, Status: corev1.PodStatus{QOSClass: corev1.PodQOSBurstable}}
	if got := Of(pod); got != corev1.PodQOSBurstable {
		t.Errorf("Of = %s, want the recorded Burstable", got)
	}
}
