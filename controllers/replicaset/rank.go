package replicaset

import (
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/controllers/podstate"
)

// DeletionCostAnnotation lets users say which pods to remove first on scale-down (lower first).
const DeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// podsToDelete picks the n pods whose removal costs least, in Kubernetes' order: unscheduled before
// scheduled; Pending before Unknown before Running; not ready before ready; lower deletion cost; pods
// doubled up on a node with their siblings; ready more recently; more restarts; created more recently.
func podsToDelete(pods []*corev1.Pod, n int) []*corev1.Pod {
	if n >= len(pods) {
		return pods
	}
	perNode := map[string]int{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			perNode[p.Spec.NodeName]++
		}
	}
	ranked := make([]*corev1.Pod, len(pods))
	copy(ranked, pods)
	sort.SliceStable(ranked, func(i, j int) bool { return deleteBefore(ranked[i], ranked[j], perNode) })
	return ranked[:n]
}

var phaseOrder = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

func deleteBefore(a, b *corev1.Pod, perNode map[string]int) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if pa, pb := phaseOrder[a.Status.Phase], phaseOrder[b.Status.Phase]; pa != pb {
		return pa < pb
	}
	ra, rb := podstate.IsReady(a), podstate.IsReady(b)
	if ra != rb {
		return !ra
	}
	if ca, cb := deletionCost(a), deletionCost(b); ca != cb {
		return ca < cb
	}
	if na, nb := perNode[a.Spec.NodeName], perNode[b.Spec.NodeName]; na != nb {
		return na > nb
	}
	if ra && rb {
		ta, tb := podstate.ReadyCondition(a).LastTransitionTime, podstate.ReadyCondition(b).LastTransitionTime
		if !ta.Equal(&tb) {
			return tb.Before(&ta) // a became ready later: it has proven itself less
		}
	}
	if xa, xb := podstate.RestartCount(a), podstate.RestartCount(b); xa != xb {
		return xa > xb
	}
	ta, tb := a.CreationTimestamp, b.CreationTimestamp
	if !ta.Equal(&tb) {
		return tb.Before(&ta)
	}
	return a.Name < b.Name
}

func deletionCost(p *corev1.Pod) int64 {
	v, ok := p.Annotations[DeletionCostAnnotation]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0 // the apiserver validates it; be lenient with what slipped through
	}
	return n
}
