package scheduler

import (
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// nominator remembers which waiting pods preemption nominated to which node,
// as kube-scheduler's queue does, so that Filter keeps the room their
// victims free for them (framework.PodNominator). It learns of nominations
// from pod events (status.nominatedNodeName) and, without waiting for the
// status write to come back through the informer, from this scheduler's own
// preemptions; a pod leaves it when it is assumed, bound or deleted.
type nominator struct {
	mu     sync.RWMutex
	byNode map[string][]*framework.PodInfo
	nodeOf map[types.UID]string
	// count lets the Filter of every node skip the lock while nobody is
	// nominated, which is nearly always.
	count atomic.Int64
}

var _ framework.PodNominator = (*nominator)(nil)

func newNominator() *nominator {
	return &nominator{byNode: map[string][]*framework.PodInfo{}, nodeOf: map[types.UID]string{}}
}

// NominatedPodsForNode implements framework.PodNominator.
func (n *nominator) NominatedPodsForNode(node string) []*framework.PodInfo {
	if n.count.Load() == 0 {
		return nil
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	pods := n.byNode[node]
	if len(pods) == 0 {
		return nil
	}
	return append([]*framework.PodInfo(nil), pods...)
}

// add nominates pod to node, replacing any earlier nomination; node ""
// means the pod's own status.nominatedNodeName.
func (n *nominator) add(pod *v1.Pod, node string) {
	if node == "" {
		node = pod.Status.NominatedNodeName
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deleteLocked(pod.UID)
	if node == "" {
		return
	}
	n.nodeOf[pod.UID] = node
	n.byNode[node] = append(n.byNode[node], framework.NewPodInfo(pod))
	n.count.Add(1)
}

// update follows a waiting pod's update. An update that neither had nor has
// a nominated node keeps the nomination the scheduler already made: its
// own status write may not have come back through the informer yet.
func (n *nominator) update(oldPod, pod *v1.Pod) {
	node := pod.Status.NominatedNodeName
	if node == "" && oldPod.Status.NominatedNodeName == "" {
		n.mu.RLock()
		node = n.nodeOf[pod.UID]
		n.mu.RUnlock()
	}
	n.add(pod, node)
}

// delete forgets pod's nomination, if any.
func (n *nominator) delete(pod *v1.Pod) {
	if n.count.Load() == 0 {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deleteLocked(pod.UID)
}

func (n *nominator) deleteLocked(uid types.UID) {
	node, ok := n.nodeOf[uid]
	if !ok {
		return
	}
	delete(n.nodeOf, uid)
	pods := n.byNode[node]
	for i, pi := range pods {
		if pi.Pod.UID == uid {
			pods = append(pods[:i:i], pods[i+1:]...)
			break
		}
	}
	if len(pods) == 0 {
		delete(n.byNode, node)
	} else {
		n.byNode[node] = pods
	}
	n.count.Add(-1)
}
