package eviction

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// SystemCriticalPriority is the lowest priority of a critical pod
// (system-cluster-critical; system-node-critical is above it). The kubelet
// never evicts critical pods.
const SystemCriticalPriority int32 = 2000000000

// Reason is the pod status reason of an evicted pod, and its Event's.
const Reason = "Evicted"

func isCritical(pod *corev1.Pod) bool {
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority
}

type rankedPod struct {
	pod   *corev1.Pod
	usage PodUsage
}

// rank orders pods for eviction under the threshold's signal, as the
// kubelet: for memory and disk, pods using more than they request first,
// then lower priority first, then the larger use above requests first; for
// PIDs, lower priority first, then more processes first.
func rank(sig Signal, pods []rankedPod) {
	byPriority := func(a, b rankedPod) int { return cmp.Compare(priority(a.pod), priority(b.pod)) }
	switch res := signalInfo[sig].resource; res {
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage, resourceInodes:
		used := func(p rankedPod) int64 {
			if res == corev1.ResourceMemory {
				return p.usage.MemoryTotal()
			}
			return p.usage.Disk
		}
		if res == resourceInodes {
			res = corev1.ResourceEphemeralStorage // pods are ranked by their bytes, as by the kubelet for inodes without per-pod inode stats
		}
		above := func(p rankedPod) int64 {
			req := podRequest(p.pod, res)
			return used(p) - req.Value()
		}
		slices.SortStableFunc(pods, func(a, b rankedPod) int {
			// exceeding requests (true) first
			if ea, eb := above(a) > 0, above(b) > 0; ea != eb {
				if ea {
					return -1
				}
				return 1
			}
			if c := byPriority(a, b); c != 0 {
				return c
			}
			return cmp.Compare(above(b), above(a))
		})
	default: // PIDs
		slices.SortStableFunc(pods, func(a, b rankedPod) int {
			if c := byPriority(a, b); c != 0 {
				return c
			}
			return cmp.Compare(b.usage.Processes, a.usage.Processes)
		})
	}
}

func priority(pod *corev1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// podRequest is what the pod requests of a resource: the sum over its
// containers, or its largest init container's request when that is more.
func podRequest(pod *corev1.Pod, res corev1.ResourceName) resource.Quantity {
	var sum resource.Quantity
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Requests[res]; ok {
			sum.Add(q)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if q, ok := c.Resources.Requests[res]; ok && q.Cmp(sum) > 0 {
			sum = q.DeepCopy()
		}
	}
	return sum
}

// message is the kubelet's eviction message: the resource, the threshold and
// what was available, and for memory each container using more than it
// requests.
func message(t Threshold, o Observation, pod *corev1.Pod, u PodUsage) string {
	res := signalInfo[t.Signal].resource
	var b strings.Builder
	fmt.Fprintf(&b, "The node was low on resource: %s. ", res)
	format := resource.BinarySI
	if res == resourceInodes || res == resourcePIDs {
		format = resource.DecimalSI
	}
	// An absolute threshold is shown as given, a percentage as the
	// quantity it comes to, as by the kubelet.
	threshold := resource.NewQuantity(t.value(o.Capacity), format)
	if t.Quantity != nil {
		threshold = t.Quantity
	}
	fmt.Fprintf(&b, "Threshold quantity: %s, available: %s. ", threshold, resource.NewQuantity(o.Available, format))
	if res == corev1.ResourceMemory {
		for _, c := range pod.Spec.Containers {
			used, ok := u.Memory[c.Name]
			if !ok {
				continue
			}
			req := c.Resources.Requests[corev1.ResourceMemory]
			usage := resource.NewQuantity(used, resource.BinarySI)
			if usage.Cmp(req) > 0 {
				fmt.Fprintf(&b, "Container %s was using %s, request is %s, has larger consumption of %s. ", c.Name, usage, req.String(), res)
			}
		}
	}
	return b.String()
}

// candidates measures the pods that may be evicted (critical ones may not).
func candidates(ctx context.Context, src Source, pods []*corev1.Pod) []rankedPod {
	var out []rankedPod
	for _, p := range pods {
		if isCritical(p) {
			continue
		}
		out = append(out, rankedPod{pod: p, usage: src.PodUsage(ctx, p)})
	}
	return out
}
