package replicaset

import (
	"math"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffkube/skiff/controllers/podstate"
)

// DeletionCostAnnotation lets users say which pods to remove first on scale-down (lower first).
const DeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// podsToDelete picks the n pods whose removal costs least, in Kubernetes' order (ActivePodsWithRanks
// with LogarithmicScaleDown): unscheduled before scheduled; Pending before Unknown before Running; not
// ready before ready; lower deletion cost; more related pods on the same node (related: active pods of
// every ReplicaSet with the same controller, e.g. all of a Deployment's); ready more recently; more
// restarts of a container (the highest count, then that of restartable init containers); created more
// recently. Ready and creation times are compared in log2 buckets of their age at now, and pods in the
// same bucket by uid, so that among pods of similar age the choice is random rather than always the
// youngest.
func podsToDelete(pods, related []*corev1.Pod, n int, now time.Time) []*corev1.Pod {
	if n >= len(pods) {
		return pods
	}
	perNode := map[string]int{}
	for _, p := range related {
		if podstate.IsActive(p) {
			perNode[p.Spec.NodeName]++
		}
	}
	ranked := make([]*corev1.Pod, len(pods))
	copy(ranked, pods)
	sort.SliceStable(ranked, func(i, j int) bool { return deleteBefore(ranked[i], ranked[j], perNode, now) })
	return ranked[:n]
}

// relatedPods returns the active and inactive pods controlled by the ReplicaSets that share rs's
// controller (rs among them). A ReplicaSet without a controller has none: its pods all rank alike.
func (c *Controller) relatedPods(rs *appsv1.ReplicaSet) []*corev1.Pod {
	owner := metav1.GetControllerOf(rs)
	if owner == nil {
		return nil
	}
	sets, err := c.rsLister.ReplicaSets(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	uids := map[types.UID]bool{}
	for _, s := range sets {
		if ref := metav1.GetControllerOfNoCopy(s); ref != nil && ref.UID == owner.UID {
			uids[s.UID] = true
		}
	}
	pods, err := c.podLister.Pods(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*corev1.Pod
	for _, p := range pods {
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && uids[ref.UID] {
			out = append(out, p)
		}
	}
	return out
}

var phaseOrder = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

func deleteBefore(a, b *corev1.Pod, perNode map[string]int, now time.Time) bool {
	if a.Spec.NodeName != b.Spec.NodeName && (a.Spec.NodeName == "" || b.Spec.NodeName == "") {
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
			return youngerFirst(a, b, ta, tb, now) // a became ready later: it has proven itself less
		}
	}
	if ma, mb := maxRestarts(a), maxRestarts(b); ma != mb {
		return ma > mb
	}
	if sa, sb := maxSidecarRestarts(a), maxSidecarRestarts(b); sa != sb {
		return sa > sb
	}
	ta, tb := a.CreationTimestamp, b.CreationTimestamp
	if !ta.Equal(&tb) {
		return youngerFirst(a, b, ta, tb, now)
	}
	return a.Name < b.Name
}

// youngerFirst orders by the log2 bucket of the age of ta and tb at now (younger first), and pods in
// the same bucket by uid. A zero time counts as the youngest.
func youngerFirst(a, b *corev1.Pod, ta, tb metav1.Time, now time.Time) bool {
	if now.IsZero() || ta.IsZero() || tb.IsZero() {
		if ta.IsZero() || tb.IsZero() {
			return ta.IsZero()
		}
		return ta.After(tb.Time)
	}
	if ba, bb := ageBucket(ta.Time, now), ageBucket(tb.Time, now); ba != bb {
		return ba < bb
	}
	return a.UID < b.UID
}

func ageBucket(t, now time.Time) int64 {
	d := now.Sub(t)
	if d <= 0 {
		return -1
	}
	return int64(math.Log2(float64(d)))
}

func maxRestarts(p *corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n = max(n, s.RestartCount)
	}
	return n
}

// maxSidecarRestarts is the highest restart count among the pod's restartable init containers.
func maxSidecarRestarts(p *corev1.Pod) int32 {
	sidecars := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	var n int32
	for _, s := range p.Status.InitContainerStatuses {
		if sidecars[s.Name] {
			n = max(n, s.RestartCount)
		}
	}
	return n
}

// deletionCost reads the pod-deletion-cost annotation as the apiserver validates it: an int32 in
// canonical form (no plus sign, no leading zeros). Anything else counts as 0.
func deletionCost(p *corev1.Pod) int32 {
	v, ok := p.Annotations[DeletionCostAnnotation]
	if !ok || v == "" {
		return 0
	}
	if v[0] == '+' || (v[0] == '0' && v != "0") {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}
