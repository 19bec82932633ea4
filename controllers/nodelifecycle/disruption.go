package nodelifecycle

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/flowcontrol"
)

// Eviction paces NoExecute taints, as kube-controller-manager's
// --node-eviction-rate, --secondary-node-eviction-rate,
// --unhealthy-zone-threshold and --large-cluster-size-threshold.
type Eviction struct {
	// Rate is the nodes a second tainted NoExecute in a zone (0.1).
	Rate float32
	// SecondaryRate is Rate in a partly disrupted zone of more than
	// LargeClusterSizeThreshold nodes (0.01); 0 stops it there too.
	SecondaryRate float32
	// UnhealthyZoneThreshold is the share of a zone's nodes (more than two)
	// not Ready that makes it partly disrupted (0.55).
	UnhealthyZoneThreshold float64
	// LargeClusterSizeThreshold: in a partly disrupted zone of at most this
	// many nodes no node is tainted NoExecute (50).
	LargeClusterSizeThreshold int
}

// DefaultEviction is kube-controller-manager's.
func DefaultEviction() Eviction {
	return Eviction{Rate: 0.1, SecondaryRate: 0.01, UnhealthyZoneThreshold: 0.55, LargeClusterSizeThreshold: 50}
}

// Check says which setting of e is out of range, by kube-controller-manager's
// flag name, or returns nil.
func (e Eviction) Check() error {
	switch {
	case !(e.Rate > 0):
		return fmt.Errorf("--node-eviction-rate %g: must be more than 0 nodes a second", e.Rate)
	case math.IsInf(float64(e.Rate), 0):
		// A float64 setting too large for float32; pflag refuses it itself.
		return fmt.Errorf("--node-eviction-rate %g: must be at most %g nodes a second", e.Rate, math.MaxFloat32)
	case !(e.SecondaryRate >= 0):
		return fmt.Errorf("--secondary-node-eviction-rate %g: must be 0 (none while a large zone is partly disrupted) or more", e.SecondaryRate)
	case math.IsInf(float64(e.SecondaryRate), 0):
		return fmt.Errorf("--secondary-node-eviction-rate %g: must be at most %g nodes a second", e.SecondaryRate, math.MaxFloat32)
	case !(e.UnhealthyZoneThreshold > 0 && e.UnhealthyZoneThreshold <= 1):
		return fmt.Errorf("--unhealthy-zone-threshold %g: must be a share of a zone's nodes, more than 0 and at most 1", e.UnhealthyZoneThreshold)
	case e.LargeClusterSizeThreshold < 0:
		return fmt.Errorf("--large-cluster-size-threshold %d: must be 0 or more nodes", e.LargeClusterSizeThreshold)
	}
	return nil
}

// zoneState is a zone's health, as kube-controller-manager judges it.
type zoneState int

const (
	zoneNormal zoneState = iota
	// zonePartial: more than two nodes and at least the unhealthy threshold
	// not Ready. Too many at once to be independent failures: in a small
	// zone no node is tainted NoExecute, in a large one slowly.
	zonePartial
	// zoneFull: no node Ready. When every zone is, the control plane is
	// more likely cut off from the nodes than every node dead: no node is
	// tainted NoExecute and the taints put on before are taken off, so
	// nothing is evicted (kube's "master disruption mode").
	zoneFull
)

func (s zoneState) String() string {
	return [...]string{"Normal", "PartialDisruption", "FullDisruption"}[s]
}

// zoneOf is a node's zone key: its region and zone labels ("" without them),
// as kube-controller-manager groups nodes. As there, the deprecated
// failure-domain.beta.kubernetes.io labels win when present (even empty):
// a node whose old and new labels disagree is counted in the same zone.
func zoneOf(n *corev1.Node) string {
	region, ok := n.Labels[corev1.LabelFailureDomainBetaRegion]
	if !ok {
		region = n.Labels[corev1.LabelTopologyRegion]
	}
	zone, ok := n.Labels[corev1.LabelFailureDomainBetaZone]
	if !ok {
		zone = n.Labels[corev1.LabelTopologyZone]
	}
	if region == "" && zone == "" {
		return ""
	}
	return region + "/" + zone
}

// LabelExcludeDisruption on a node leaves it out of its zone's count of
// Ready and not Ready nodes, as kube-controller-manager leaves it out: its
// NoExecute taints are still paced by its zone.
const LabelExcludeDisruption = "node.kubernetes.io/exclude-disruption"

func excludedFromDisruption(n *corev1.Node) bool {
	_, ok := n.Labels[LabelExcludeDisruption]
	return ok
}

func nodeReady(n *corev1.Node) bool {
	r := readyCondition(n)
	return r != nil && r.Status == corev1.ConditionTrue
}

// disruption is the zones' states, from the nodes' Ready conditions as
// last counted.
type disruption struct {
	ready, notReady map[string]int     // nodes per zone
	counted         map[string]counted // by node name
	verdict
}

// verdict is the zones' states judged from the counts. judge makes a new
// one, so a copy keeps the previous judgment to compare with.
type verdict struct {
	zones   map[string]zoneState
	allFull bool // every zone (at least one) fully disrupted
}

// counted is how a node was counted.
type counted struct {
	zone  string
	ready bool
}

// classify judges each zone by its nodes' Ready conditions.
func classify(nodes []*corev1.Node, unhealthyThreshold float64) disruption {
	d := disruption{ready: map[string]int{}, notReady: map[string]int{}, counted: make(map[string]counted, len(nodes))}
	for _, n := range nodes {
		if !excludedFromDisruption(n) {
			d.count(n.Name, counted{zoneOf(n), nodeReady(n)})
		}
	}
	d.judge(unhealthyThreshold)
	return d
}

func (d *disruption) count(name string, c counted) {
	if c.ready {
		d.ready[c.zone]++
	} else {
		d.notReady[c.zone]++
	}
	d.counted[name] = c
}

func (d *disruption) uncount(name string) {
	c, ok := d.counted[name]
	if !ok {
		return
	}
	if c.ready {
		d.ready[c.zone]--
	} else {
		d.notReady[c.zone]--
	}
	delete(d.counted, name)
}

// judge sets zones and allFull from the counts.
func (d *disruption) judge(unhealthyThreshold float64) {
	d.zones = map[string]zoneState{}
	for _, m := range []map[string]int{d.ready, d.notReady} {
		for z := range m {
			r, nr := d.ready[z], d.notReady[z]
			switch {
			case r+nr == 0:
				continue
			case r == 0:
				d.zones[z] = zoneFull
			case nr > 2 && float64(nr)/float64(r+nr) >= unhealthyThreshold:
				d.zones[z] = zonePartial
			default:
				d.zones[z] = zoneNormal
			}
		}
	}
	d.allFull = len(d.zones) > 0
	for _, s := range d.zones {
		d.allFull = d.allFull && s == zoneFull
	}
}

// recount counts node as it is now and, if that changed its count, judges
// the zones again and says so. Cheap (one node's counts and a judgment per
// zone), so each sync can judge with its node's newest condition, which the
// informer may not show yet.
func (d *disruption) recount(node *corev1.Node, unhealthyThreshold float64) bool {
	if excludedFromDisruption(node) {
		if _, ok := d.counted[node.Name]; !ok {
			return false
		}
		d.uncount(node.Name)
		d.judge(unhealthyThreshold)
		return true
	}
	now := counted{zoneOf(node), nodeReady(node)}
	if c, ok := d.counted[node.Name]; ok && c == now {
		return false
	}
	d.uncount(node.Name)
	d.count(node.Name, now)
	d.judge(unhealthyThreshold)
	return true
}

// zoneRate is how many nodes per second may be tainted NoExecute in a zone
// of its state and size; 0 stops it.
func (c *Controller) zoneRate(s zoneState, size int) float32 {
	switch s {
	case zonePartial:
		if size <= c.eviction.LargeClusterSizeThreshold {
			return 0
		}
		return c.eviction.SecondaryRate
	default:
		// A fully disrupted zone while others are healthy is most likely
		// gone: its nodes are tainted at the normal pace.
		return c.eviction.Rate
	}
}

// updateDisruption judges the zones from every node: each monitor sweep.
func (c *Controller) updateDisruption(nodes []*corev1.Node, now time.Time) {
	d := classify(nodes, c.eviction.UnhealthyZoneThreshold)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setDisruption(d, now)
}

// setDisruption replaces the judgment with d, judged afresh from every
// node. c.mu is held.
func (c *Controller) setDisruption(d disruption, now time.Time) {
	prev := c.disruption.verdict
	c.disruption, c.disruptionKnown = d, true
	c.judged(prev, now)
}

// judged acts on a new judgment of the zones after prev: it logs what
// changed and sets each zone's pace of NoExecute taints. Leaving master
// disruption mode restarts every node's grace period, as the nodes had no
// way to report. c.mu is held.
func (c *Controller) judged(prev verdict, now time.Time) {
	d := c.disruption
	switch {
	case d.allFull && !prev.allFull:
		c.log.Warn("no node is Ready: the control plane is more likely cut off from the nodes than every node down; no node is tainted NoExecute and nothing is evicted until one is Ready again (master disruption mode)", "nodes", len(d.counted))
	case !d.allFull && prev.allFull:
		c.log.Info("a node is Ready again: leaving master disruption mode; every node gets a new grace period")
		for _, h := range c.health {
			h.probe = now
		}
	}
	// Entering or leaving master disruption mode sets every zone's pace:
	// none while in it, each zone's own after.
	modeChanged := d.allFull != prev.allFull
	for z, s := range d.zones {
		old, seen := prev.zones[z]
		t, paced := c.tainters[z]
		if seen && old == s && paced && !modeChanged {
			continue
		}
		if !d.allFull && ((seen && old != s) || (!seen && s != zoneNormal)) {
			c.log.Info("zone health changed", "zone", z, "state", s.String(), "nodes", d.ready[z]+d.notReady[z])
		}
		rate := c.zoneRate(s, d.ready[z]+d.notReady[z])
		if d.allFull {
			rate = 0
		}
		if !seen || !paced {
			c.tainters[z] = newTainter(rate) // a zone first seen: a full bucket
			continue
		}
		c.tainters[z] = swapTainter(t, rate)
	}
}

// swapTainter gives a zone whose state changed the pace of rate, as
// kube-controller-manager swaps its limiter: the old one is kept when its
// rate is the same, and a new one starts without its token when the old one
// had none left (or allowed none), so a change of state grants no taint.
func swapTainter(old flowcontrol.RateLimiter, rate float32) flowcontrol.RateLimiter {
	switch {
	case old == nil && rate <= 0:
		return nil
	case old != nil && old.QPS() == rate:
		return old
	}
	t := newTainter(rate)
	if t != nil && (old == nil || !old.TryAccept()) {
		t.TryAccept()
	}
	return t
}

// newTainter paces NoExecute taints in one zone (burst 1, as kube's); nil
// for a rate of 0 stops them.
func newTainter(rate float32) flowcontrol.RateLimiter {
	if rate <= 0 {
		return nil
	}
	return flowcontrol.NewTokenBucketRateLimiter(rate, 1)
}

// judgeWith brings the zones' judgment up to date with node as this sync
// left it (the informer may not have its new Ready condition yet): the last
// node to go down must find every zone disrupted. Before the first monitor
// sweep it judges every node: a controller that just took the lead must
// not evict on taints put on before every node went down. c.mu is held.
func (c *Controller) judgeWith(node *corev1.Node, now time.Time) error {
	if !c.disruptionKnown {
		nodes, err := c.nodeLister.List(labels.Everything())
		if err != nil {
			return err
		}
		c.setDisruption(classify(nodes, c.eviction.UnhealthyZoneThreshold), now)
	}
	prev := c.disruption.verdict
	if c.disruption.recount(node, c.eviction.UnhealthyZoneThreshold) {
		c.judged(prev, now)
	}
	return nil
}

// noExecute says whether the node may be newly tainted NoExecute now
// (taking a token of its zone's pace when take is set and it may), and
// whether the NoExecute taints of unreachable and not ready nodes must come
// off, as in master disruption mode.
func (c *Controller) noExecute(node *corev1.Node, now time.Time, take bool) (allowed, lift bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.judgeWith(node, now); err != nil {
		return false, false // unsure: no new taint, none lifted
	}
	if c.disruption.allFull {
		return false, true
	}
	if !take {
		return true, false
	}
	z := zoneOf(node)
	t, ok := c.tainters[z]
	if !ok {
		// A zone whose every node is left out of the count (exclude-disruption)
		// is never judged: its nodes are tainted at the normal pace.
		t = newTainter(c.eviction.Rate)
		c.tainters[z] = t
	}
	return t != nil && t.TryAccept(), false
}
