package framework

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ImageStateSummary describes one image present on a node: its size and on how
// many nodes of the cluster it is present (ImageLocality discounts images that
// are everywhere anyway).
type ImageStateSummary struct {
	Size     int64
	NumNodes int
}

// NodeInfo is a node with everything placed on it: pods (bound or assumed),
// the sum of their requests, the host ports they hold and the images the node
// reports. Generation increases with every change so the cache can copy only
// what changed into a scheduling snapshot.
type NodeInfo struct {
	node *v1.Node
	// The node fields that the default filters and scores read on every
	// node of every attempt, copied by SetNode: in the NodeInfo they share
	// its cache lines, where the Node object is usually one or two fetches
	// from memory more per node.
	nodeName      string
	unschedulable bool
	taints        []v1.Taint

	Pods                         []*PodInfo
	PodsWithAffinity             []*PodInfo
	PodsWithRequiredAntiAffinity []*PodInfo
	UsedPorts                    HostPortInfo

	Requested        *Resource
	NonZeroRequested *Resource
	Allocatable      *Resource

	ImageStates map[string]*ImageStateSummary

	Generation int64
}

// NewNodeInfo returns a NodeInfo holding pods (the node is set separately).
func NewNodeInfo(pods ...*v1.Pod) *NodeInfo {
	ni := &NodeInfo{
		UsedPorts:        HostPortInfo{},
		Requested:        &Resource{},
		NonZeroRequested: &Resource{},
		Allocatable:      &Resource{},
		ImageStates:      map[string]*ImageStateSummary{},
	}
	for _, p := range pods {
		ni.AddPod(p)
	}
	return ni
}

// Node returns the node, nil if only pods are known so far.
func (n *NodeInfo) Node() *v1.Node {
	if n == nil {
		return nil
	}
	return n.node
}

// NodeName is Node().Name without reading the Node object.
func (n *NodeInfo) NodeName() string { return n.nodeName }

// Unschedulable is Node().Spec.Unschedulable without reading the Node object.
func (n *NodeInfo) Unschedulable() bool { return n.unschedulable }

// Taints is Node().Spec.Taints (shared, not to be modified); an untainted
// node's answer needs no read of the Node object.
func (n *NodeInfo) Taints() []v1.Taint { return n.taints }

// SetNode sets the node and its allocatable resources.
func (n *NodeInfo) SetNode(node *v1.Node) {
	n.node = node
	n.nodeName = node.Name
	n.unschedulable = node.Spec.Unschedulable
	n.taints = node.Spec.Taints
	n.Allocatable = NewResource(node.Status.Allocatable)
}

// RemoveNode forgets the node but keeps the pods (they may still be deleted later).
func (n *NodeInfo) RemoveNode() {
	n.node = nil
	n.nodeName, n.unschedulable, n.taints = "", false, nil
}

// AddPod adds a pod to the node's accounting.
func (n *NodeInfo) AddPod(pod *v1.Pod) { n.AddPodInfo(NewPodInfo(pod)) }

// AddPodInfo adds an already parsed pod.
func (n *NodeInfo) AddPodInfo(pi *PodInfo) {
	n.Pods = append(n.Pods, pi)
	if pi.HasAffinity() {
		n.PodsWithAffinity = append(n.PodsWithAffinity, pi)
	}
	if len(pi.RequiredAntiAffinityTerms) > 0 {
		n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, pi)
	}
	n.Requested.AddResource(pi.Requests)
	n.NonZeroRequested.AddResource(pi.NonZeroRequests)
	n.UsedPorts.AddPod(pi.Pod)
}

// RemovePod removes the pod with pod's UID; it reports whether it was found.
func (n *NodeInfo) RemovePod(pod *v1.Pod) bool {
	uid := pod.UID
	n.PodsWithAffinity = removeByUID(n.PodsWithAffinity, uid)
	n.PodsWithRequiredAntiAffinity = removeByUID(n.PodsWithRequiredAntiAffinity, uid)
	for i, pi := range n.Pods {
		if pi.Pod.UID != uid {
			continue
		}
		last := len(n.Pods) - 1
		n.Pods[i] = n.Pods[last]
		n.Pods[last] = nil
		n.Pods = n.Pods[:last]
		n.Requested.SubResource(pi.Requests)
		n.NonZeroRequested.SubResource(pi.NonZeroRequests)
		n.UsedPorts.RemovePod(pi.Pod)
		return true
	}
	return false
}

func removeByUID(list []*PodInfo, uid types.UID) []*PodInfo {
	for i, pi := range list {
		if pi.Pod.UID == uid {
			last := len(list) - 1
			list[i] = list[last]
			list[last] = nil
			return list[:last]
		}
	}
	return list
}

// Clone copies the NodeInfo deeply enough that the copy's pod lists and sums
// can be changed (preemption simulates removals on a clone). Pods themselves
// are shared and must not be mutated.
func (n *NodeInfo) Clone() *NodeInfo {
	out := &NodeInfo{
		node:                         n.node,
		nodeName:                     n.nodeName,
		unschedulable:                n.unschedulable,
		taints:                       n.taints,
		Pods:                         append([]*PodInfo(nil), n.Pods...),
		PodsWithAffinity:             append([]*PodInfo(nil), n.PodsWithAffinity...),
		PodsWithRequiredAntiAffinity: append([]*PodInfo(nil), n.PodsWithRequiredAntiAffinity...),
		UsedPorts:                    n.UsedPorts.Clone(),
		Requested:                    n.Requested.Clone(),
		NonZeroRequested:             n.NonZeroRequested.Clone(),
		Allocatable:                  n.Allocatable.Clone(),
		ImageStates:                  n.ImageStates,
		Generation:                   n.Generation,
	}
	return out
}
