package cache

import (
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// DefaultAssumedPodTTL is how long an assumed pod whose bind succeeded may wait
// for the informer to confirm it before the cache stops counting it.
const DefaultAssumedPodTTL = 30 * time.Second

type podState struct {
	pod *v1.Pod
	// deadline is set once binding finished; zero means "keep".
	deadline        time.Time
	bindingFinished bool
}

type imageState struct {
	size  int64
	nodes sets.Set[string]
}

// Cache is safe for concurrent use.
type Cache struct {
	ttl time.Duration
	now func() time.Time

	mu          sync.RWMutex
	nodes       map[string]*framework.NodeInfo
	podStates   map[types.UID]*podState
	assumedPods sets.Set[types.UID]
	images      map[string]*imageState
	generation  int64
	// changes lists, oldest first, the nodes whose generation moved, so
	// that a snapshot visits only the nodes changed since it was last
	// updated (a scheduling cycle per pod must not walk every node). It
	// always holds each cached node's newest change; see compactChanges.
	changes []nodeChange
	// removedNodes counts node removals so snapshots know to rebuild their list.
	removedNodes int64
}

// nodeChange records that a node reached a generation.
type nodeChange struct {
	generation int64
	name       string
}

// New returns an empty cache; ttl <= 0 means DefaultAssumedPodTTL.
func New(ttl time.Duration) *Cache {
	if ttl <= 0 {
		ttl = DefaultAssumedPodTTL
	}
	return &Cache{
		ttl:         ttl,
		now:         time.Now,
		nodes:       map[string]*framework.NodeInfo{},
		podStates:   map[types.UID]*podState{},
		assumedPods: sets.New[types.UID](),
		images:      map[string]*imageState{},
	}
}

func (c *Cache) bump(name string, ni *framework.NodeInfo) {
	c.generation++
	ni.Generation = c.generation
	c.changes = append(c.changes, nodeChange{generation: c.generation, name: name})
	if len(c.changes) > 2*len(c.nodes)+1024 {
		c.compactChanges()
	}
}

// compactChanges keeps only each cached node's newest change, in
// generation order. A snapshot looks for the nodes changed after its
// generation, and a node changed after it if and only if its newest change
// is, so nothing a snapshot needs is lost. Nodes no longer cached are
// dropped: removals reach snapshots through removedNodes.
func (c *Cache) compactChanges() {
	seen := make(map[string]bool, len(c.nodes))
	kept := make([]nodeChange, 0, len(c.nodes))
	for i := len(c.changes) - 1; i >= 0; i-- {
		ch := c.changes[i]
		if _, cached := c.nodes[ch.name]; cached && !seen[ch.name] {
			seen[ch.name] = true
			kept = append(kept, ch)
		}
	}
	slices.Reverse(kept)
	c.changes = kept
}

func (c *Cache) nodeInfo(name string) *framework.NodeInfo {
	ni, ok := c.nodes[name]
	if !ok {
		ni = framework.NewNodeInfo()
		c.nodes[name] = ni
	}
	return ni
}

func (c *Cache) addPodLocked(pod *v1.Pod) { c.addPodInfoLocked(framework.NewPodInfo(pod)) }

func (c *Cache) addPodInfoLocked(pi *framework.PodInfo) {
	ni := c.nodeInfo(pi.Pod.Spec.NodeName)
	ni.AddPodInfo(pi)
	c.bump(pi.Pod.Spec.NodeName, ni)
}

func (c *Cache) removePodLocked(pod *v1.Pod) {
	ni, ok := c.nodes[pod.Spec.NodeName]
	if !ok {
		return
	}
	if ni.RemovePod(pod) {
		c.bump(pod.Spec.NodeName, ni)
	}
	if ni.Node() == nil && len(ni.Pods) == 0 {
		delete(c.nodes, pod.Spec.NodeName)
		c.removedNodes++
	}
}

// AssumePod counts pod (with Spec.NodeName set to the chosen node) on its
// node before the API server has recorded the binding.
func (c *Cache) AssumePod(pod *v1.Pod) error { return c.AssumePodInfo(framework.NewPodInfo(pod)) }

// AssumePodInfo is AssumePod for an already parsed pod (pi.Pod has the node
// name set), sparing a second parse of what the scheduling queue parsed.
func (c *Cache) AssumePodInfo(pi *framework.PodInfo) error {
	pod := pi.Pod
	if pod.Spec.NodeName == "" {
		return fmt.Errorf("assume pod %s/%s: no node name", pod.Namespace, pod.Name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.podStates[pod.UID]; ok {
		return fmt.Errorf("assume pod %s/%s: already in the cache", pod.Namespace, pod.Name)
	}
	c.addPodInfoLocked(pi)
	c.podStates[pod.UID] = &podState{pod: pod}
	c.assumedPods.Insert(pod.UID)
	return nil
}

// FinishBinding starts the TTL of an assumed pod whose bind call returned.
func (c *Cache) FinishBinding(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.podStates[pod.UID]; ok && c.assumedPods.Has(pod.UID) {
		ps.bindingFinished = true
		ps.deadline = c.now().Add(c.ttl)
	}
}

// ForgetPod drops an assumed pod (its bind failed).
func (c *Cache) ForgetPod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.podStates[pod.UID]
	if !ok || !c.assumedPods.Has(pod.UID) {
		return fmt.Errorf("forget pod %s/%s: not assumed", pod.Namespace, pod.Name)
	}
	if ps.pod.Spec.NodeName != pod.Spec.NodeName {
		return fmt.Errorf("forget pod %s/%s: assumed on %q, not %q", pod.Namespace, pod.Name, ps.pod.Spec.NodeName, pod.Spec.NodeName)
	}
	c.removePodLocked(ps.pod)
	delete(c.podStates, pod.UID)
	c.assumedPods.Delete(pod.UID)
	return nil
}

// AddPod records a bound pod seen by the informer, confirming it if assumed.
func (c *Cache) AddPod(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.podStates[pod.UID]
	switch {
	case ok && c.assumedPods.Has(pod.UID):
		// Confirmed: replace the assumed copy (it may have landed elsewhere if
		// another scheduler won a race).
		c.removePodLocked(ps.pod)
		c.addPodLocked(pod)
		c.assumedPods.Delete(pod.UID)
		ps.pod = pod
		ps.deadline = time.Time{}
	case ok:
		// Already known (informer resync): treat as an update.
		c.removePodLocked(ps.pod)
		c.addPodLocked(pod)
		ps.pod = pod
	default:
		c.addPodLocked(pod)
		c.podStates[pod.UID] = &podState{pod: pod}
	}
}

// UpdatePod replaces a bound pod's accounting.
func (c *Cache) UpdatePod(_, newPod *v1.Pod) {
	c.AddPod(newPod)
}

// RemovePod forgets a pod (deleted, or finished so it no longer holds resources).
func (c *Cache) RemovePod(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.podStates[pod.UID]
	if !ok {
		return
	}
	c.removePodLocked(ps.pod)
	delete(c.podStates, pod.UID)
	c.assumedPods.Delete(pod.UID)
}

// IsAssumedPod reports whether pod is assumed and not yet confirmed.
func (c *Cache) IsAssumedPod(pod *v1.Pod) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.assumedPods.Has(pod.UID)
}

// GetPod returns the cached copy of pod (by UID), or false.
func (c *Cache) GetPod(pod *v1.Pod) (*v1.Pod, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ps, ok := c.podStates[pod.UID]
	if !ok {
		return nil, false
	}
	return ps.pod, true
}

// AddNode records a node (or replaces it).
func (c *Cache) AddNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ni := c.nodeInfo(node.Name)
	if old := ni.Node(); old != nil {
		c.removeImagesLocked(old)
	}
	ni.SetNode(node)
	c.addImagesLocked(node)
	c.bump(node.Name, ni)
}

// UpdateNode is AddNode for a changed node.
func (c *Cache) UpdateNode(_, newNode *v1.Node) { c.AddNode(newNode) }

// RemoveNode forgets a node; its pods stay counted until they are deleted.
func (c *Cache) RemoveNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ni, ok := c.nodes[node.Name]
	if !ok {
		return
	}
	if old := ni.Node(); old != nil {
		c.removeImagesLocked(old)
	}
	ni.RemoveNode()
	c.bump(node.Name, ni)
	if len(ni.Pods) == 0 {
		delete(c.nodes, node.Name)
	}
	c.removedNodes++
}

func (c *Cache) addImagesLocked(node *v1.Node) {
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			st, ok := c.images[name]
			if !ok {
				st = &imageState{size: img.SizeBytes, nodes: sets.New[string]()}
				c.images[name] = st
			}
			st.nodes.Insert(node.Name)
		}
	}
}

func (c *Cache) removeImagesLocked(node *v1.Node) {
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			if st, ok := c.images[name]; ok {
				st.nodes.Delete(node.Name)
				if st.nodes.Len() == 0 {
					delete(c.images, name)
				}
			}
		}
	}
}

// Cleanup expires assumed pods whose bind finished more than the TTL ago
// without the informer confirming them; it returns how many it expired.
func (c *Cache) Cleanup() int {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for uid := range c.assumedPods {
		ps := c.podStates[uid]
		if ps == nil || !ps.bindingFinished || now.Before(ps.deadline) {
			continue
		}
		c.removePodLocked(ps.pod)
		delete(c.podStates, uid)
		c.assumedPods.Delete(uid)
		n++
	}
	return n
}

// Counts returns the number of nodes and pods known, for tests and metrics.
func (c *Cache) Counts() (nodes, pods, assumed int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, ni := range c.nodes {
		if ni.Node() != nil {
			nodes++
		}
	}
	return nodes, len(c.podStates), c.assumedPods.Len()
}
