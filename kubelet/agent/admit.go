package agent

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// The kubelet's admission reasons: outOfPrefix begins that of a pod refused
// for want of a resource (OutOfcpu, OutOfmemory, OutOfpods…); a pod whose
// node selector or required node affinity the node does not match is
// refused as the scheduler's NodeAffinity filter words it.
const (
	outOfPrefix         = "OutOf"
	reasonNodeAffinity  = "NodeAffinity"
	messageNodeAffinity = "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
)

// sawNode keeps the latest Node object the agent read or wrote (its labels
// are what node selectors match), and learns its pod CIDR.
func (a *Agent) sawNode(n *corev1.Node) {
	if n != nil {
		a.lastNode.Store(n)
	}
	a.setPodCIDR(n)
}

// matchesNode says whether the node matches the pod's node selector and
// required node affinity (matchFields included, as a DaemonSet's pods pin
// their node). A pod the Node last seen does not match is checked again
// against the Node read afresh, as the kubelet does before refusing it: an
// administrator may just have labelled the node.
func (a *Agent) matchesNode(ctx context.Context, pod *corev1.Pod) (bool, error) {
	if len(pod.Spec.NodeSelector) == 0 && (pod.Spec.Affinity == nil || pod.Spec.Affinity.NodeAffinity == nil ||
		pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil) {
		return true, nil
	}
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	if n := a.lastNode.Load(); n != nil {
		if ok, _ := required.Match(n); ok {
			return true, nil
		}
	}
	n, err := a.client.CoreV1().Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading node %s to admit pod %s/%s: %w", a.cfg.NodeName, pod.Namespace, pod.Name, err)
	}
	a.lastNode.Store(n)
	ok, _ := required.Match(n)
	return ok, nil
}

// admittedPods are the pods of this node that hold its resources, against
// which a new pod is admitted: not finished, not refused or evicted, and
// either admitted by this agent or already started (found running after an
// agent restart). Pods still waiting for admission are not counted: the
// kubelet admits pods one at a time, each against those before it.
// a.admitMu must be held.
func (a *Agent) admittedPods(newPod *corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, obj := range a.indexer.List() {
		p := obj.(*corev1.Pod)
		if p.UID == newPod.UID || p.Spec.NodeName != a.cfg.NodeName || a.evicted[p.UID] || a.finished[p.UID] != nil ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		started := p.Status.Phase == corev1.PodRunning || len(p.Status.ContainerStatuses) > 0 || len(p.Status.InitContainerStatuses) > 0
		if !started && a.keys[p.UID] == "" {
			continue // not admitted yet
		}
		out = append(out, p)
	}
	return out
}

// insufficientResource says whether pod fits on a node with allocatable
// beside the pods admitted before it, as the kubelet's predicate admission
// (the scheduler's NodeResourcesFit): the pod count first, then CPU,
// memory, ephemeral storage and the extended resources and huge pages the
// pod requests, by their requests. It returns the first shortage as the
// kubelet words it (reason OutOfcpu, message "Node didn't have enough
// resource: cpu, requested: 600, used: 600, capacity: 1000"), or "" when
// the pod fits. An extended resource the node does not have at all is not
// checked (a cluster-level resource, as in Kubernetes).
func insufficientResource(pod *corev1.Pod, others []*corev1.Pod, allocatable corev1.ResourceList) (reason, message string) {
	short := func(name corev1.ResourceName, requested, used, capacity int64) (string, string) {
		return outOfPrefix + string(name), fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
			name, requested, used, capacity)
	}
	if allowed := allocatable.Pods().Value(); int64(len(others))+1 > allowed {
		return short(corev1.ResourcePods, 1, int64(len(others)), allowed)
	}
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	var checked []corev1.ResourceName
	for name, q := range req {
		if q.IsZero() || name == corev1.ResourcePods {
			continue
		}
		if _, known := allocatable[name]; !known && isExtendedResource(name) {
			continue
		}
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage || isScalarResource(name) {
			checked = append(checked, name)
		}
	}
	if len(checked) == 0 {
		return "", ""
	}
	// The scheduler's order: CPU, memory, ephemeral storage, then the rest.
	rank := map[corev1.ResourceName]int{corev1.ResourceCPU: 0, corev1.ResourceMemory: 1, corev1.ResourceEphemeralStorage: 2}
	sort.Slice(checked, func(i, j int) bool {
		ri, iok := rank[checked[i]]
		rj, jok := rank[checked[j]]
		switch {
		case iok && jok:
			return ri < rj
		case iok != jok:
			return iok
		}
		return checked[i] < checked[j]
	})
	used := corev1.ResourceList{}
	for _, p := range others {
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			sum := used[name]
			sum.Add(q)
			used[name] = sum
		}
	}
	value := func(q resource.Quantity, name corev1.ResourceName) int64 {
		if name == corev1.ResourceCPU {
			return q.MilliValue()
		}
		return q.Value()
	}
	for _, name := range checked {
		r, u, c := value(req[name], name), value(used[name], name), value(allocatable[name], name)
		if r > c-u {
			return short(name, r, u, c)
		}
	}
	return "", ""
}

// isExtendedResource says whether name is an extended resource
// (example.com/gpu): a domain-qualified name outside kubernetes.io.
func isExtendedResource(name corev1.ResourceName) bool {
	s := string(name)
	return strings.Contains(s, "/") && !strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) && !strings.HasPrefix(s, "requests.")
}

// isScalarResource says whether name is counted like the scheduler's
// scalar resources: extended resources, huge pages, and domain-qualified
// native ones.
func isScalarResource(name corev1.ResourceName) bool {
	s := string(name)
	return isExtendedResource(name) || strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(s, corev1.ResourceDefaultNamespacePrefix)
}
