package framework

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The node fields NodeInfo keeps for Filter and Score follow SetNode, survive
// Clone and go with RemoveNode.
func TestNodeInfoMirrorsHotNodeFields(t *testing.T) {
	tainted := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Spec: v1.NodeSpec{Unschedulable: true, Taints: []v1.Taint{
			{Key: "k", Value: "v", Effect: v1.TaintEffectPreferNoSchedule},
		}},
	}
	check := func(what string, ni *NodeInfo, node *v1.Node) {
		t.Helper()
		name, unsched, taints := "", false, []v1.Taint(nil)
		if node != nil {
			name, unsched, taints = node.Name, node.Spec.Unschedulable, node.Spec.Taints
		}
		if ni.NodeName() != name || ni.Unschedulable() != unsched || len(ni.Taints()) != len(taints) ||
			(len(taints) > 0 && ni.Taints()[0] != taints[0]) {
			t.Errorf("%s: NodeName %q Unschedulable %v Taints %v; want %q %v %v",
				what, ni.NodeName(), ni.Unschedulable(), ni.Taints(), name, unsched, taints)
		}
	}
	ni := NewNodeInfo()
	check("no node yet", ni, nil)
	ni.SetNode(tainted)
	check("SetNode", ni, tainted)
	check("Clone", ni.Clone(), tainted)

	plain := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	ni.SetNode(plain)
	check("SetNode with an updated node", ni, plain)
	ni.SetNode(tainted)
	ni.RemoveNode()
	check("RemoveNode", ni, nil)
}
