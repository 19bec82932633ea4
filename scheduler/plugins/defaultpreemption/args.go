package defaultpreemption

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// Defaults of kube-scheduler's DefaultPreemptionArgs.
const (
	DefaultMinCandidateNodesPercentage = 10
	DefaultMinCandidateNodesAbsolute   = 100
)

// Args configure the plugin, as kube-scheduler's DefaultPreemptionArgs: how
// many nodes where preemption would help are enough to choose from. The
// dry run stops once it has found that many (at least one of them evicting
// no pod a PodDisruptionBudget protects), so that a big cluster is not
// simulated node by node for every pod that does not fit.
type Args struct {
	// MinCandidateNodesPercentage is the share, 0 to 100, of the nodes
	// worth a dry run to find; nil for DefaultMinCandidateNodesPercentage.
	MinCandidateNodesPercentage *int32
	// MinCandidateNodesAbsolute is the least number of them to find,
	// whatever the share gives; nil for DefaultMinCandidateNodesAbsolute.
	MinCandidateNodesAbsolute *int32
}

// WithDefaults fills in kube-scheduler's defaults for the fields left nil.
func (a Args) WithDefaults() Args {
	if a.MinCandidateNodesPercentage == nil {
		a.MinCandidateNodesPercentage = ptr.To[int32](DefaultMinCandidateNodesPercentage)
	}
	if a.MinCandidateNodesAbsolute == nil {
		a.MinCandidateNodesAbsolute = ptr.To[int32](DefaultMinCandidateNodesAbsolute)
	}
	return a
}

// Validate checks a, defaults filled in, as kube-scheduler checks
// DefaultPreemptionArgs: a percentage of 0 to 100, a non-negative absolute
// number, and not both zero (preemption would have no node to choose).
func (a Args) Validate() error {
	a = a.WithDefaults()
	pct, abs := *a.MinCandidateNodesPercentage, *a.MinCandidateNodesAbsolute
	pctPath, absPath := field.NewPath("minCandidateNodesPercentage"), field.NewPath("minCandidateNodesAbsolute")
	var errs field.ErrorList
	if pct < 0 || pct > 100 {
		errs = append(errs, field.Invalid(pctPath, pct, "not in valid range [0, 100]"))
	}
	if abs < 0 {
		errs = append(errs, field.Invalid(absPath, abs, "not in valid range [0, inf)"))
	}
	if pct == 0 && abs == 0 {
		errs = append(errs,
			field.Invalid(pctPath, pct, "cannot be zero at the same time as minCandidateNodesAbsolute"),
			field.Invalid(absPath, abs, "cannot be zero at the same time as minCandidateNodesPercentage"))
	}
	return errs.ToAggregate()
}

// numCandidates is how many candidates the dry run looks for among n
// potential nodes: the configured share of them, at least the configured
// absolute number, and never more than n. It is at least one even where
// the share of a small cluster rounds down to none and the absolute number
// is zero: kube-scheduler then keeps no candidate at all and preempts
// nothing, which no valid setting can mean.
func (a Args) numCandidates(n int) int {
	a = a.WithDefaults()
	want := n * int(*a.MinCandidateNodesPercentage) / 100
	want = max(want, int(*a.MinCandidateNodesAbsolute), 1)
	return min(want, n)
}
