package podtopologyspread

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/skiffkube/skiff/scheduler/framework"
)

const (
	// Name is the plugin's registry name.
	Name = "PodTopologySpread"
	// ErrReasonConstraintsNotMatch is the Filter reason when the skew would be exceeded.
	ErrReasonConstraintsNotMatch = "node(s) didn't match pod topology spread constraints"
	// ErrReasonNodeLabelNotMatch is the Filter reason for a node missing a constraint's label.
	ErrReasonNodeLabelNotMatch = ErrReasonConstraintsNotMatch + " (missing required label)"

	preFilterKey framework.StateKey = "PreFilter" + Name
	preScoreKey  framework.StateKey = "PreScore" + Name
)

// constraint is a parsed v1.TopologySpreadConstraint.
type constraint struct {
	maxSkew     int64
	minDomains  int64
	key         string
	selector    labels.Selector
	honorAff    bool // nodeAffinityPolicy: Honor (default)
	honorTaints bool // nodeTaintsPolicy: Honor (default Ignore)
}

// parseConstraints parses the specs whose whenUnsatisfiable is action; the
// values of podLabels for their matchLabelKeys narrow their selectors.
func parseConstraints(specs []v1.TopologySpreadConstraint, podLabels map[string]string, action v1.UnsatisfiableConstraintAction) ([]constraint, error) {
	var out []constraint
	for _, c := range specs {
		if c.WhenUnsatisfiable != action {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("topology spread constraint on %q: %w", c.TopologyKey, err)
		}
		if c.LabelSelector == nil {
			sel = labels.Nothing()
		}
		for _, k := range c.MatchLabelKeys {
			if v, ok := podLabels[k]; ok {
				if r, err := labels.NewRequirement(k, "in", []string{v}); err == nil {
					sel = sel.Add(*r)
				}
			}
		}
		pc := constraint{
			maxSkew:     int64(c.MaxSkew),
			minDomains:  1,
			key:         c.TopologyKey,
			selector:    sel,
			honorAff:    c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == v1.NodeInclusionPolicyHonor,
			honorTaints: c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == v1.NodeInclusionPolicyHonor,
		}
		if c.MinDomains != nil {
			pc.minDomains = int64(*c.MinDomains)
		}
		out = append(out, pc)
	}
	return out, nil
}

// podConstraints are the constraints of pod with whenUnsatisfiable action:
// its own when it has any, the default ones otherwise.
func (pl *PodTopologySpread) podConstraints(pod *v1.Pod, action v1.UnsatisfiableConstraintAction) ([]constraint, error) {
	if len(pod.Spec.TopologySpreadConstraints) > 0 {
		return parseConstraints(pod.Spec.TopologySpreadConstraints, pod.Labels, action)
	}
	return pl.defaultConstraints(pod, action)
}

// hasAllKeys reports whether node has every constraint's topology label:
// kube-scheduler leaves other nodes out of the counts.
func hasAllKeys(node *v1.Node, cs []constraint) bool {
	for i := range cs {
		if _, ok := node.Labels[cs[i].key]; !ok {
			return false
		}
	}
	return true
}

// includes reports whether node's pods count for c under c's own node
// inclusion policies (each constraint applies its own, as in kube-scheduler).
func (c *constraint) includes(node *v1.Node, pod *v1.Pod, aff nodeaffinity.RequiredNodeAffinity) bool {
	if c.honorAff {
		if ok, _ := aff.Match(node); !ok {
			return false
		}
	}
	return !c.honorTaints || !untolerated(node, pod)
}

func untolerated(node *v1.Node, pod *v1.Pod) bool {
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect != v1.TaintEffectNoSchedule && t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		tolerated := false
		for j := range pod.Spec.Tolerations {
			if pod.Spec.Tolerations[j].ToleratesTaint(klog.Background(), t, false) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			return true
		}
	}
	return false
}

// countMatching counts pods on ni in pod's namespace that sel picks, ignoring
// terminating pods (they are on their way out).
func countMatching(ni *framework.NodeInfo, ns string, sel labels.Selector) int64 {
	var n int64
	for _, pi := range ni.Pods {
		if matches(pi.Pod, ns, sel) {
			n++
		}
	}
	return n
}

func matches(p *v1.Pod, ns string, sel labels.Selector) bool {
	return p.Namespace == ns && p.DeletionTimestamp == nil && sel.Matches(labels.Set(p.Labels))
}
