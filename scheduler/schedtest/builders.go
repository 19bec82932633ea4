package schedtest

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// PodWrapper builds a pod.
type PodWrapper struct{ v1.Pod }

// MakePod starts a pod "p" in namespace "default" with one container "c".
func MakePod() *PodWrapper {
	return &PodWrapper{v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-p"},
		Spec: v1.PodSpec{
			SchedulerName: v1.DefaultSchedulerName,
			Containers:    []v1.Container{{Name: "c", Image: "pause"}},
		},
	}}
}

// Obj returns the pod.
func (p *PodWrapper) Obj() *v1.Pod { return &p.Pod }

// Name sets the name (and a matching UID).
func (p *PodWrapper) Name(n string) *PodWrapper {
	p.ObjectMeta.Name = n
	p.ObjectMeta.UID = types.UID("uid-" + p.ObjectMeta.Namespace + "-" + n)
	return p
}

// Namespace sets the namespace.
func (p *PodWrapper) Namespace(ns string) *PodWrapper {
	p.ObjectMeta.Namespace = ns
	p.ObjectMeta.UID = types.UID("uid-" + ns + "-" + p.ObjectMeta.Name)
	return p
}

// UID sets the UID.
func (p *PodWrapper) UID(uid string) *PodWrapper { p.ObjectMeta.UID = types.UID(uid); return p }

// Node sets spec.nodeName.
func (p *PodWrapper) Node(n string) *PodWrapper { p.Spec.NodeName = n; return p }

// Priority sets spec.priority.
func (p *PodWrapper) Priority(v int32) *PodWrapper { p.Spec.Priority = &v; return p }

// Label adds a label.
func (p *PodWrapper) Label(k, v string) *PodWrapper {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[k] = v
	return p
}

// Req adds requests to the first container: name/quantity pairs.
func (p *PodWrapper) Req(kv ...string) *PodWrapper {
	p.Spec.Containers[0].Resources.Requests = addList(p.Spec.Containers[0].Resources.Requests, kv)
	return p
}

// Container appends a container with the given requests.
func (p *PodWrapper) Container(image string, kv ...string) *PodWrapper {
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{
		Name: fmt.Sprintf("c%d", len(p.Spec.Containers)), Image: image,
		Resources: v1.ResourceRequirements{Requests: addList(nil, kv)},
	})
	return p
}

// Image sets the first container's image.
func (p *PodWrapper) Image(image string) *PodWrapper { p.Spec.Containers[0].Image = image; return p }

// InitReq appends an init container with the given requests.
func (p *PodWrapper) InitReq(kv ...string) *PodWrapper {
	p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{
		Name: fmt.Sprintf("init%d", len(p.Spec.InitContainers)), Image: "pause",
		Resources: v1.ResourceRequirements{Requests: addList(nil, kv)},
	})
	return p
}

// SidecarReq appends a restartable init container (a sidecar, restartPolicy
// Always) with the given requests.
func (p *PodWrapper) SidecarReq(kv ...string) *PodWrapper {
	always := v1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{
		Name: fmt.Sprintf("init%d", len(p.Spec.InitContainers)), Image: "pause", RestartPolicy: &always,
		Resources: v1.ResourceRequirements{Requests: addList(nil, kv)},
	})
	return p
}

// Overhead sets spec.overhead.
func (p *PodWrapper) Overhead(kv ...string) *PodWrapper { p.Spec.Overhead = addList(nil, kv); return p }

// HostPort adds a host port to the first container.
func (p *PodWrapper) HostPort(proto v1.Protocol, ip string, port int32) *PodWrapper {
	p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{HostIP: ip, HostPort: port, ContainerPort: port, Protocol: proto})
	return p
}

// NodeSelector sets spec.nodeSelector.
func (p *PodWrapper) NodeSelector(kv ...string) *PodWrapper {
	p.Spec.NodeSelector = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		p.Spec.NodeSelector[kv[i]] = kv[i+1]
	}
	return p
}

// Toleration adds a toleration.
func (p *PodWrapper) Toleration(key string, op v1.TolerationOperator, value string, effect v1.TaintEffect) *PodWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: key, Operator: op, Value: value, Effect: effect})
	return p
}

func (p *PodWrapper) affinity() *v1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
	return p.Spec.Affinity
}

// RequiredNodeAffinityIn requires node label key to be one of values.
func (p *PodWrapper) RequiredNodeAffinityIn(key string, values ...string) *PodWrapper {
	a := p.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &v1.NodeAffinity{}
	}
	a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}},
	}}}
	return p
}

// PreferredNodeAffinityIn prefers nodes whose label key is one of values.
func (p *PodWrapper) PreferredNodeAffinityIn(weight int32, key string, values ...string) *PodWrapper {
	a := p.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &v1.NodeAffinity{}
	}
	a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		v1.PreferredSchedulingTerm{Weight: weight, Preference: v1.NodeSelectorTerm{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}},
		}})
	return p
}

func term(topologyKey string, kv []string) v1.PodAffinityTerm {
	ml := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		ml[kv[i]] = kv[i+1]
	}
	return v1.PodAffinityTerm{TopologyKey: topologyKey, LabelSelector: &metav1.LabelSelector{MatchLabels: ml}}
}

// PodAffinity requires pods labelled kv in the same topologyKey domain.
func (p *PodWrapper) PodAffinity(topologyKey string, kv ...string) *PodWrapper {
	a := p.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &v1.PodAffinity{}
	}
	a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term(topologyKey, kv))
	return p
}

// PodAntiAffinity forbids pods labelled kv in the same topologyKey domain.
func (p *PodWrapper) PodAntiAffinity(topologyKey string, kv ...string) *PodWrapper {
	a := p.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term(topologyKey, kv))
	return p
}

// PreferredPodAffinity prefers the domain of pods labelled kv.
func (p *PodWrapper) PreferredPodAffinity(weight int32, topologyKey string, kv ...string) *PodWrapper {
	a := p.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &v1.PodAffinity{}
	}
	a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		v1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term(topologyKey, kv)})
	return p
}

// PreferredPodAntiAffinity prefers to avoid the domain of pods labelled kv.
func (p *PodWrapper) PreferredPodAntiAffinity(weight int32, topologyKey string, kv ...string) *PodWrapper {
	a := p.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		v1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term(topologyKey, kv)})
	return p
}

// SpreadConstraint adds a topology spread constraint selecting pods labelled kv.
func (p *PodWrapper) SpreadConstraint(maxSkew int32, topologyKey string, when v1.UnsatisfiableConstraintAction, kv ...string) *PodWrapper {
	t := term(topologyKey, kv)
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, v1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: topologyKey, WhenUnsatisfiable: when, LabelSelector: t.LabelSelector,
	})
	return p
}

// NodeWrapper builds a node.
type NodeWrapper struct{ v1.Node }

// MakeNode starts a node "n" with 110 pods of capacity and nothing else.
func MakeNode() *NodeWrapper {
	n := &NodeWrapper{v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{}}}}
	return n.Capacity("pods", "110")
}

// Obj returns the node.
func (n *NodeWrapper) Obj() *v1.Node { return &n.Node }

// Name sets the name and the kubernetes.io/hostname label.
func (n *NodeWrapper) Name(name string) *NodeWrapper {
	n.ObjectMeta.Name = name
	n.Labels[v1.LabelHostname] = name
	return n
}

// Label adds a label.
func (n *NodeWrapper) Label(k, v string) *NodeWrapper { n.Labels[k] = v; return n }

// Capacity sets capacity and allocatable: name/quantity pairs.
func (n *NodeWrapper) Capacity(kv ...string) *NodeWrapper {
	n.Status.Capacity = addList(n.Status.Capacity, kv)
	n.Status.Allocatable = addList(n.Status.Allocatable, kv)
	return n
}

// Taint adds a taint.
func (n *NodeWrapper) Taint(key, value string, effect v1.TaintEffect) *NodeWrapper {
	n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Value: value, Effect: effect})
	return n
}

// Unschedulable cordons the node.
func (n *NodeWrapper) Unschedulable() *NodeWrapper { n.Spec.Unschedulable = true; return n }

// Image reports an image of the given size on the node.
func (n *NodeWrapper) Image(name string, size int64) *NodeWrapper {
	n.Status.Images = append(n.Status.Images, v1.ContainerImage{Names: []string{name}, SizeBytes: size})
	return n
}

func addList(rl v1.ResourceList, kv []string) v1.ResourceList {
	if rl == nil {
		rl = v1.ResourceList{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		rl[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return rl
}

// NodeInfo builds a NodeInfo for node holding pods.
func NodeInfo(node *v1.Node, pods ...*v1.Pod) *framework.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(node)
	return ni
}
