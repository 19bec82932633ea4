package endpointslice

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
)

// Topology Aware Routing (the service.kubernetes.io/topology-mode: Auto annotation), as Kubernetes'
// topologycache package: each zone is owed a share of a Service's ready endpoints in proportion to
// the allocatable CPU of its ready nodes; endpoints are hinted for their own zone, and then moved
// from zones with more than their share to zones with less. Where no safe share exists, no hints
// are given and the Service is told why.

// topologyKey is the one key of the topology queue: any node change means the same work.
const topologyKey = "topology"

// overloadThreshold is how much more than its share of traffic an endpoint may get.
const overloadThreshold = 0.2

// The messages of Kubernetes' TopologyAwareHintsEnabled and TopologyAwareHintsDisabled events.
const (
	msgNoZoneSpecified           = "One or more endpoints do not have a zone specified"
	msgNoAllocatedHintsForZones  = "No hints allocated for zones"
	msgHintsEnabled              = "Topology Aware Hints has been enabled"
	msgHintsDisabled             = "Topology Aware Hints has been disabled"
	msgInsufficientNodeInfo      = "Insufficient Node information: allocatable CPU or zone not specified on one or more nodes"
	msgNodesReadyInOneZoneOnly   = "Nodes only ready in one zone"
	msgInsufficientEndpoints     = "Insufficient number of endpoints"
	msgMinAllocationExceedsLimit = "Unable to allocate minimum required endpoints to each zone without exceeding overload threshold"
)

// hintEvent is an event for the Service, recorded once the slices are written.
type hintEvent struct{ typ, reason, message string }

func hintsDisabled(msg string, at discoveryv1.AddressType) hintEvent {
	return hintEvent{corev1.EventTypeWarning, "TopologyAwareHintsDisabled", fmt.Sprintf("%s, addressType: %s", msg, at)}
}

// zoneCounts counts endpoints (or hints) by zone.
type zoneCounts map[string]int

// allocation is how many endpoints a zone should be hinted: at least minimum, at most maximum,
// ideally desired.
type allocation struct {
	minimum, maximum int
	desired          float64
}

// topology remembers the zones' CPU shares and, per Service and address family, the hints it gave,
// as Kubernetes' TopologyCache.
type topology struct {
	mu        sync.Mutex
	cpuShares map[string]float64 // by zone; nil while the nodes do not allow hints
	hinted    map[string]map[discoveryv1.AddressType]zoneCounts
	populated map[string]bool // Services whose hints are on (the Enabled event was given)
}

func newTopology() *topology {
	return &topology{hinted: map[string]map[discoveryv1.AddressType]zoneCounts{}, populated: map[string]bool{}}
}

// setNodes computes the zones' CPU shares from the ready nodes that are not control-plane nodes. One
// such node without a zone or allocatable CPU, or fewer than two zones, leaves no shares (hints are
// then removed everywhere).
func (t *topology) setNodes(nodes []*corev1.Node) {
	cpu := map[string]*resource.Quantity{}
	total := resource.Quantity{}
	sufficient := true
	for _, n := range nodes {
		if excludedNode(n) || !nodeReady(n) {
			continue
		}
		c := n.Status.Allocatable.Cpu()
		zone := n.Labels[corev1.LabelTopologyZone]
		if zone == "" || c.IsZero() {
			sufficient = false
			break
		}
		total.Add(*c)
		if q, ok := cpu[zone]; ok {
			q.Add(*c)
		} else {
			cpu[zone] = c
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !sufficient || total.IsZero() || len(cpu) < 2 {
		t.cpuShares = nil
		return
	}
	t.cpuShares = map[string]float64{}
	for zone, q := range cpu {
		t.cpuShares[zone] = float64(q.MilliValue()) / float64(total.MilliValue())
	}
}

// excludedNode reports whether a node's CPU stays out of the shares: control-plane nodes run no
// workload traffic.
func excludedNode(n *corev1.Node) bool {
	_, cp := n.Labels["node-role.kubernetes.io/control-plane"]
	_, master := n.Labels["node-role.kubernetes.io/master"]
	return cp || master
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// overloaded returns the Services whose hints leave some zone with fewer endpoints than the overload
// threshold allows for its current share.
func (t *topology) overloaded() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for key, byFamily := range t.hinted {
		for _, counts := range byFamily {
			if serviceOverloaded(counts, t.cpuShares) {
				out = append(out, key)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

func serviceOverloaded(counts zoneCounts, shares map[string]float64) bool {
	if len(counts) == 0 {
		return false
	}
	if len(shares) == 0 {
		return true
	}
	total := 0.0
	for _, n := range counts {
		total += float64(n)
	}
	for zone, share := range shares {
		n, ok := counts[zone]
		if !ok || n < int(math.Ceil(total*share*(1/(1+overloadThreshold)))) {
			return true
		}
	}
	return false
}

// hintsOn reports whether the Service's hints are on.
func (t *topology) hintsOn(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.populated[key]
}

// forget drops what is remembered of one address family of a Service; as Kubernetes', the Service's
// hints count as off afterwards.
func (t *topology) forget(key string, at discoveryv1.AddressType) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.hinted[key], at)
	if len(t.hinted[key]) == 0 {
		delete(t.hinted, key)
	}
	delete(t.populated, key)
}

// forgetService drops all that is remembered of a Service.
func (t *topology) forgetService(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.hinted, key)
	delete(t.populated, key)
}

// allocations are the zones' allocations for n ready endpoints, or the reason there are none.
func (t *topology) allocations(n int) (map[string]allocation, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.cpuShares == nil:
		return nil, msgInsufficientNodeInfo
	case len(t.cpuShares) < 2:
		return nil, msgNodesReadyInOneZoneOnly
	case len(t.cpuShares) > n:
		return nil, fmt.Sprintf("%s (%d endpoints, %d zones)", msgInsufficientEndpoints, n, len(t.cpuShares))
	}
	out := map[string]allocation{}
	minTotal := 0
	for zone, share := range t.cpuShares {
		desired := share * float64(n)
		minimum := int(math.Ceil(desired * (1 / (1 + overloadThreshold))))
		out[zone] = allocation{minimum: minimum, desired: math.Max(desired, float64(minimum))}
		minTotal += minimum
	}
	if minTotal > n {
		return nil, fmt.Sprintf("%s (%d endpoints, %d zones)", msgMinAllocationExceedsLimit, n, len(t.cpuShares))
	}
	for zone, a := range out {
		a.maximum = a.minimum + n - minTotal
		out[zone] = a
	}
	return out, ""
}

// addHints hints the slices of one address family of a Service, as Kubernetes' AddHints: unchanged
// slices whose hints still fit the allocations are kept as they are; the endpoints of the slices
// written are hinted for their own zone, then moved to the zones short of their share. When that
// cannot be done safely, hints are removed instead, with a warning.
func (t *topology) addHints(key string, at discoveryv1.AddressType, h *hintedSlices) []hintEvent {
	ready := 0
	for _, s := range slices.Concat(h.create, h.update, h.unchanged) {
		for _, e := range s.Endpoints {
			if isReady(e) {
				ready++
			}
		}
	}
	disable := func(msg string) []hintEvent {
		t.forget(key, at)
		removeHints(h)
		return []hintEvent{hintsDisabled(msg, at)}
	}
	allocs, reason := t.allocations(ready)
	if reason != "" {
		return disable(reason)
	}

	// Hints already in unchanged slices count if they still fit; otherwise the slice is rewritten.
	allocated := zoneCounts{}
	kept := h.unchanged[:0:0]
	for _, s := range h.unchanged {
		if counts := hintsByZone(s, allocated, allocs); counts != nil {
			kept = append(kept, s)
			for z, n := range counts {
				allocated[z] += n
			}
		} else {
			h.update = append(h.update, s.DeepCopy())
		}
	}
	h.unchanged = kept

	// 1. Every ready endpoint of the slices written is hinted for its own zone.
	written := slices.Concat(h.create, h.update)
	for _, s := range written {
		for i, e := range s.Endpoints {
			if !isReady(e) {
				continue
			}
			if e.Zone == nil || *e.Zone == "" {
				return disable(msgNoZoneSpecified)
			}
			allocated[*e.Zone]++
			s.Endpoints[i].Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: *e.Zone}}}
		}
	}
	// 2. Zones over their share give endpoints to zones under it.
	giving, receiving := givingAndReceiving(allocs, allocated)
	for zone, diff := range redistribute(written, giving, receiving) {
		allocated[zone] += diff
	}
	if len(allocated) == 0 {
		return disable(msgNoAllocatedHintsForZones)
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	wasOn := t.populated[key]
	if t.hinted[key] == nil {
		t.hinted[key] = map[discoveryv1.AddressType]zoneCounts{}
	}
	t.hinted[key][at] = allocated
	t.populated[key] = true
	if wasOn {
		return nil
	}
	return []hintEvent{{corev1.EventTypeNormal, "TopologyAwareHintsEnabled", fmt.Sprintf("%s, addressType: %s", msgHintsEnabled, at)}}
}

// hintsByZone counts the hints of a slice's ready endpoints by zone, or returns nil when the slice
// must be rewritten: a ready endpoint without a hint, a hint for a zone owed nothing, or more hints
// for a zone than its maximum allows on top of those already counted.
func hintsByZone(s *discoveryv1.EndpointSlice, allocated zoneCounts, allocs map[string]allocation) zoneCounts {
	counts := zoneCounts{}
	for _, e := range s.Endpoints {
		if !isReady(e) {
			continue
		}
		if e.Hints == nil || len(e.Hints.ForZones) == 0 {
			return nil
		}
		for _, z := range e.Hints.ForZones {
			if _, ok := allocs[z.Name]; !ok {
				return nil
			}
			counts[z.Name]++
		}
	}
	for z, n := range counts {
		if n+allocated[z] > allocs[z].maximum {
			return nil
		}
	}
	return counts
}

// givingAndReceiving returns how many endpoints each zone gives to other zones and receives from
// them, moving one endpoint at a time from the zone most over its desired count to the one most
// under it, while both are at least half an endpoint off and one of them a whole one.
func givingAndReceiving(allocs map[string]allocation, allocated zoneCounts) (zoneCounts, zoneCounts) {
	over, under := map[string]float64{}, map[string]float64{}
	for zone, a := range allocs {
		have := float64(allocated[zone])
		if have > a.desired {
			over[zone] = have - a.desired
		} else if have < a.desired {
			under[zone] = a.desired - have
		}
	}
	giving, receiving := zoneCounts{}, zoneCounts{}
	for {
		gz, give := most(over)
		rz, take := most(under)
		if gz == "" || rz == "" || (give < 1 && take < 1) || give < 0.5 || take < 0.5 {
			return giving, receiving
		}
		giving[gz]++
		over[gz]--
		receiving[rz]++
		under[rz]--
	}
}

// most returns the zone with the greatest positive value (the first by name on a tie), "" if none.
func most(zones map[string]float64) (string, float64) {
	zone, max := "", 0.0
	for _, z := range slices.Sorted(maps.Keys(zones)) {
		if zones[z] > max {
			zone, max = z, zones[z]
		}
	}
	return zone, max
}

// redistribute re-hints ready endpoints of giving zones for receiving zones (in slice order; zones by
// name) and returns the change in hints per zone.
func redistribute(written []*discoveryv1.EndpointSlice, giving, receiving zoneCounts) zoneCounts {
	moved := zoneCounts{}
	for _, s := range written {
		for i, e := range s.Endpoints {
			if !isReady(e) {
				continue
			}
			if len(giving) == 0 || len(receiving) == 0 {
				return moved
			}
			if e.Zone == nil || giving[*e.Zone] == 0 {
				continue
			}
			from := *e.Zone
			to := slices.Sorted(maps.Keys(receiving))[0]
			s.Endpoints[i].Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: to}}}
			for _, c := range []struct {
				m zoneCounts
				z string
			}{{giving, from}, {receiving, to}} {
				if c.m[c.z]--; c.m[c.z] == 0 {
					delete(c.m, c.z)
				}
			}
			moved[to]++
			moved[from]--
		}
	}
	return moved
}

// onNodeAdd, onNodeUpdate and onNodeDelete queue a look at the zones' shares, as Kubernetes does
// for a node added or deleted, or one whose readiness or zone changed.
func (c *Controller) onNodeAdd(any) { c.topologyQueue.Add(topologyKey) }

func (c *Controller) onNodeUpdate(old, cur any) {
	prev, ok1 := old.(*corev1.Node)
	n, ok2 := cur.(*corev1.Node)
	if !ok1 || !ok2 {
		return
	}
	if nodeReady(prev) != nodeReady(n) || prev.Labels[corev1.LabelTopologyZone] != n.Labels[corev1.LabelTopologyZone] {
		c.topologyQueue.Add(topologyKey)
	}
}

func (c *Controller) onNodeDelete(any) { c.topologyQueue.Add(topologyKey) }

// syncTopology recomputes the zones' shares from the nodes and queues the Services their hints now
// overload.
func (c *Controller) syncTopology(_ context.Context, _ string) error {
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		return err
	}
	c.topology.setNodes(nodes)
	for _, key := range c.topology.overloaded() {
		c.queue.Add(key)
	}
	return nil
}
