package eviction

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal names a measured quantity, with the kubelet's names.
type Signal string

// The signals, as the kubelet names them.
const (
	SignalMemoryAvailable   Signal = "memory.available"
	SignalNodeFsAvailable   Signal = "nodefs.available"
	SignalNodeFsInodesFree  Signal = "nodefs.inodesFree"
	SignalImageFsAvailable  Signal = "imagefs.available"
	SignalImageFsInodesFree Signal = "imagefs.inodesFree"
	SignalPIDAvailable      Signal = "pid.available"
)

// DefaultEvictionHard is the kubelet's default --eviction-hard on Linux.
const DefaultEvictionHard = "memory.available<100Mi,nodefs.available<10%,imagefs.available<15%,nodefs.inodesFree<5%"

// signalInfo says which node condition a signal drives and which resource
// it starves (named in eviction messages).
var signalInfo = map[Signal]struct {
	condition corev1.NodeConditionType
	resource  corev1.ResourceName
	// order is the kubelet's: memory first, then disk, then PIDs.
	order int
}{
	SignalMemoryAvailable:   {corev1.NodeMemoryPressure, corev1.ResourceMemory, 0},
	SignalNodeFsAvailable:   {corev1.NodeDiskPressure, corev1.ResourceEphemeralStorage, 1},
	SignalNodeFsInodesFree:  {corev1.NodeDiskPressure, resourceInodes, 2},
	SignalImageFsAvailable:  {corev1.NodeDiskPressure, corev1.ResourceEphemeralStorage, 3},
	SignalImageFsInodesFree: {corev1.NodeDiskPressure, resourceInodes, 4},
	SignalPIDAvailable:      {corev1.NodePIDPressure, resourcePIDs, 5},
}

// Resources named in eviction messages that are no ResourceName of the API.
const (
	resourceInodes corev1.ResourceName = "inodes"
	resourcePIDs   corev1.ResourceName = "pids"
)

// Condition is the node condition a signal drives.
func (s Signal) Condition() corev1.NodeConditionType { return signalInfo[s].condition }

// Threshold is one "signal<value" of --eviction-hard: a quantity, or a
// percentage of the signal's capacity.
type Threshold struct {
	Signal Signal
	// Quantity is set for an absolute value (100Mi, 1000 inodes).
	Quantity *resource.Quantity
	// Percentage (0 < p ≤ 1) is set for a relative one (10% → 0.1).
	Percentage float64
}

// String writes the threshold as the flag takes it.
func (t Threshold) String() string {
	if t.Quantity != nil {
		return string(t.Signal) + "<" + t.Quantity.String()
	}
	return string(t.Signal) + "<" + strconv.FormatFloat(t.Percentage*100, 'f', -1, 64) + "%"
}

// value is the threshold in the signal's unit for a given capacity.
func (t Threshold) value(capacity int64) int64 {
	if t.Quantity != nil {
		return t.Quantity.Value()
	}
	return int64(float64(capacity) * t.Percentage)
}

// ParseThresholds reads a threshold list as the kubelet's --eviction-hard
// takes it ("memory.available<100Mi,nodefs.available<10%"); its errors name
// the flag (and say nothing of it when flag is ""). An empty string gives no
// thresholds (no eviction); a signal given twice is an error.
func ParseThresholds(flag, s string) ([]Threshold, error) {
	out, err := parseThresholds(s)
	if err != nil && flag != "" {
		return nil, fmt.Errorf("invalid --%s %q: %w", flag, s, err)
	}
	return out, err
}

func parseThresholds(s string) ([]Threshold, error) {
	var out []Threshold
	seen := map[Signal]bool{}
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		name, value, ok := strings.Cut(item, "<")
		if !ok {
			if strings.ContainsAny(item, ">=") {
				return nil, fmt.Errorf("%q: only the operator < is supported", item)
			}
			return nil, fmt.Errorf("%q: want signal<quantity or signal<percentage%%, e.g. memory.available<100Mi", item)
		}
		sig := Signal(strings.TrimSpace(name))
		if _, known := signalInfo[sig]; !known {
			return nil, fmt.Errorf("unknown signal %q (known: %s)", sig, knownSignals())
		}
		if seen[sig] {
			return nil, fmt.Errorf("signal %s given twice", sig)
		}
		seen[sig] = true
		t := Threshold{Signal: sig}
		value = strings.TrimSpace(value)
		if pct, ok := strings.CutSuffix(value, "%"); ok {
			p, err := strconv.ParseFloat(pct, 64)
			if err != nil || p <= 0 || p > 100 {
				return nil, fmt.Errorf("%s: percentage %q must be a number above 0 and at most 100", sig, value)
			}
			t.Percentage = p / 100
		} else {
			q, err := resource.ParseQuantity(value)
			if err != nil {
				return nil, fmt.Errorf("%s: %q is neither a quantity nor a percentage: %v", sig, value, err)
			}
			if q.Sign() < 0 {
				return nil, fmt.Errorf("%s: quantity %s must not be negative", sig, value)
			}
			t.Quantity = &q
		}
		out = append(out, t)
	}
	return out, nil
}

func knownSignals() string {
	var names []string
	for s := range signalInfo {
		names = append(names, string(s))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Observation is one measured signal: what is available of what capacity,
// in bytes, inodes or process IDs.
type Observation struct {
	Available, Capacity int64
}

// Observations are the measured signals; a signal not measured is absent
// and its thresholds are never met.
type Observations map[Signal]Observation

// thresholdsMet returns the thresholds whose signal is below them, memory
// first (the kubelet's order of reclaim).
func thresholdsMet(ts []Threshold, obs Observations) []Threshold {
	var met []Threshold
	for _, t := range ts {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		if o.Available < t.value(o.Capacity) {
			met = append(met, t)
		}
	}
	sort.SliceStable(met, func(i, j int) bool { return signalInfo[met[i].Signal].order < signalInfo[met[j].Signal].order })
	return met
}
