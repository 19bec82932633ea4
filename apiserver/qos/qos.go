// Package qos gives a pod its quality-of-service class as Kubernetes does.
// The API server records the class in status.qosClass when the pod is
// created (after admission, so LimitRange defaults count); the node agent
// reports it and admits pods under memory pressure by it; quota scopes
// (BestEffort, NotBestEffort) select pods by it.
package qos

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// computeResources are the resources a class is decided by; others (GPUs,
// ephemeral storage) do not count.
var computeResources = [2]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// Of returns the class recorded in the pod's status, or, for a pod stored
// without one, the class its spec gives.
func Of(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return Class(pod)
}

// Class returns the class the pod's resources give it: BestEffort when
// nothing requests or limits CPU or memory; Guaranteed when every
// container (or the pod as a whole, where it sets pod-level resources)
// limits both, and the requests add up to the limits; Burstable otherwise.
// Zero quantities count as unset.
func Class(pod *corev1.Pod) corev1.PodQOSClass {
	s := sums{eachLimitsBoth: true}
	if podLevel(pod.Spec.Resources) {
		s.add(pod.Spec.Resources)
	} else {
		for _, list := range [2][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for i := range list {
				s.add(&list[i].Resources)
			}
		}
	}
	return s.class()
}

// podLevel says whether the pod's own resources decide its class: they do
// when they name CPU or memory.
func podLevel(r *corev1.ResourceRequirements) bool {
	if r == nil {
		return false
	}
	for _, name := range computeResources {
		if _, ok := r.Requests[name]; ok {
			return true
		}
		if _, ok := r.Limits[name]; ok {
			return true
		}
	}
	return false
}

// sums adds up positive requests and limits of CPU and memory.
type sums struct {
	requests, limits   [2]resource.Quantity
	requested, limited [2]bool
	eachLimitsBoth     bool // every set of requirements added limits both
}

func (s *sums) add(r *corev1.ResourceRequirements) {
	both := true
	for i, name := range computeResources {
		if q, ok := r.Requests[name]; ok && q.Sign() > 0 {
			s.requests[i].Add(q)
			s.requested[i] = true
		}
		if q, ok := r.Limits[name]; ok && q.Sign() > 0 {
			s.limits[i].Add(q)
			s.limited[i] = true
		} else {
			both = false
		}
	}
	s.eachLimitsBoth = s.eachLimitsBoth && both
}

func (s *sums) class() corev1.PodQOSClass {
	if s.requested == [2]bool{} && s.limited == [2]bool{} {
		return corev1.PodQOSBestEffort
	}
	if !s.eachLimitsBoth {
		return corev1.PodQOSBurstable
	}
	// Limits of both were set; the requests must match them, both.
	for i := range computeResources {
		if !s.requested[i] || s.requests[i].Cmp(s.limits[i]) != 0 {
			return corev1.PodQOSBurstable
		}
	}
	return corev1.PodQOSGuaranteed
}
