package agent

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	schedframework "github.com/skiffkube/skiff/scheduler/framework"
)

// The kubelet's admission reasons and messages (its predicate admission):
// outOfPrefix begins that of a pod refused for want of a resource
// (OutOfcpu, OutOfmemory, OutOfpods…); the scheduler's filters the kubelet
// runs refuse as "Predicate <filter> failed: <the filter's reason>".
const (
	outOfPrefix = "OutOf"

	reasonNodeAffinity  = "NodeAffinity"
	messageNodeAffinity = "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
	reasonNodePorts     = "NodePorts"
	messageNodePorts    = "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
	reasonTaint         = "TaintToleration"
	messageTaint        = "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"

	reasonOSSelector        = "PodOSSelectorNodeLabelDoesNotMatch"
	messageOSSelector       = "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
	reasonOSNotSupported    = "PodOSNotSupported"
	messageOSNotSupported   = "Failed to admit pod as the OS field doesn't match node OS"
	reasonSupplementalGroup = "SupplementalGroupsPolicyNotSupported"
)

// sawNode keeps the latest Node object the agent read or wrote (its labels
// are what node selectors match, its taints what pods must tolerate), and
// learns its pod CIDR.
func (a *Agent) sawNode(n *corev1.Node) {
	if n != nil {
		a.lastNode.Store(n)
	}
	a.setPodCIDR(n)
}

// refusal says why the kubelet's admission would refuse pod beside the pods
// admitted before it, or "" when it admits it, in the kubelet's order: the
// checks no preemption could help (the pod's kubernetes.io/os label and
// spec.os against the node's OS, a Strict supplemental groups policy the
// node does not support), then the scheduler's filters the kubelet runs
// (generalFilter). When node affinity is the only complaint, the Node is
// read afresh and the filters run again, as the kubelet does before
// refusing: an administrator may just have labelled the node.
func (a *Agent) refusal(ctx context.Context, pod *corev1.Pod) (reason, message string, err error) {
	if os, ok := pod.Labels[corev1.LabelOSStable]; ok && os != goruntime.GOOS {
		return reasonOSSelector, messageOSSelector, nil
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != goruntime.GOOS {
		return reasonOSNotSupported, messageOSNotSupported, nil
	}
	node := a.lastNode.Load()
	if node == nil {
		if node, err = a.readNode(ctx, pod); err != nil {
			return "", "", err
		}
	}
	if strictGroupsUnsupported(pod, node) {
		return reasonSupplementalGroup, fmt.Sprintf("SupplementalGroupsPolicy=%s is not supported in this node", corev1.SupplementalGroupsPolicyStrict), nil
	}
	others := a.admittedPods(pod)
	reason, message, onlyAffinity := generalFilter(pod, node, others, a.cfg.Allocatable)
	if !onlyAffinity {
		return reason, message, nil
	}
	if node, err = a.readNode(ctx, pod); err != nil {
		return "", "", err
	}
	reason, message, _ = generalFilter(pod, node, others, a.cfg.Allocatable)
	return reason, message, nil
}

// readNode reads the node's Node object afresh and keeps it.
func (a *Agent) readNode(ctx context.Context, pod *corev1.Pod) (*corev1.Node, error) {
	n, err := a.client.CoreV1().Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading node %s to admit pod %s/%s: %w", a.cfg.NodeName, pod.Namespace, pod.Name, err)
	}
	a.lastNode.Store(n)
	return n, nil
}

// generalFilter runs the scheduler's filters the kubelet admits pods with,
// in its order, and returns the first failure as the kubelet words it:
// resources (insufficientResource), the node selector and required node
// affinity (matchFields included, as a DaemonSet's pods pin their node),
// host ports taken by the pods admitted before, and the node's NoExecute
// taints the pod does not tolerate (the other effects are the scheduler's
// business alone). onlyAffinity says node affinity was the one failure.
// The NodeName filter cannot fail here: the agent only sees the pods bound
// to its node.
func generalFilter(pod *corev1.Pod, node *corev1.Node, others []*corev1.Pod, allocatable corev1.ResourceList) (reason, message string, onlyAffinity bool) {
	var failures [][2]string
	if r, m := insufficientResource(pod, others, allocatable); r != "" {
		failures = append(failures, [2]string{r, m})
	}
	affinityFailed := false
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		affinityFailed = true
		failures = append(failures, [2]string{reasonNodeAffinity, messageNodeAffinity})
	}
	if hostPortsTaken(pod, others) {
		failures = append(failures, [2]string{reasonNodePorts, messageNodePorts})
	}
	noExecute := func(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }
	if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, noExecute, false); untolerated {
		failures = append(failures, [2]string{reasonTaint, messageTaint})
	}
	if len(failures) == 0 {
		return "", "", false
	}
	return failures[0][0], failures[0][1], affinityFailed && len(failures) == 1
}

// hostPortsTaken says whether a host port the pod asks for (its containers'
// and sidecars') clashes with one a pod admitted before holds, as the
// scheduler's NodePorts filter counts them.
func hostPortsTaken(pod *corev1.Pod, others []*corev1.Pod) bool {
	var wanted []*corev1.ContainerPort
	schedframework.ForEachHostPort(pod, func(p *corev1.ContainerPort) { wanted = append(wanted, p) })
	if len(wanted) == 0 {
		return false
	}
	used := schedframework.HostPortInfo{}
	for _, p := range others {
		used.AddPod(p)
	}
	for _, p := range wanted {
		if used.CheckConflict(p.HostIP, string(p.Protocol), p.HostPort) {
			return true
		}
	}
	return false
}

// strictGroupsUnsupported says whether the pod asks for the Strict
// supplemental groups policy on a node that does not report supporting it
// (status.features), which the kubelet refuses since the feature's beta.
func strictGroupsUnsupported(pod *corev1.Pod, node *corev1.Node) bool {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.SupplementalGroupsPolicy == nil || *sc.SupplementalGroupsPolicy != corev1.SupplementalGroupsPolicyStrict {
		return false
	}
	f := node.Status.Features
	return f == nil || f.SupplementalGroupsPolicy == nil || !*f.SupplementalGroupsPolicy
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
		if p.UID == newPod.UID || p.Spec.NodeName != a.cfg.NodeName || a.failed[p.UID] != nil || a.finished[p.UID] != nil || podFinished(p) {
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
