package framework

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// NoNodeAvailableMsg starts every "does not fit" message (kube-scheduler's wording).
const NoNodeAvailableMsg = "0/%v nodes are available"

// Diagnosis is what the scheduler learned while failing to place a pod.
type Diagnosis struct {
	// NodeToStatus says why each filtered node was rejected.
	NodeToStatus NodeToStatus
	// UnschedulablePlugins names the plugins that rejected the pod.
	UnschedulablePlugins map[string]bool
	// PreFilterMsg is set when a PreFilter plugin rejected the pod for every node.
	PreFilterMsg string
	// PostFilterMsg is what preemption reported.
	PostFilterMsg string
}

// FitError is returned when no node fits the pod. Its message is the one users
// read in `kubectl describe pod`: a histogram of reasons over all nodes, sorted,
// then preemption's own verdict.
type FitError struct {
	Pod         *v1.Pod
	NumAllNodes int
	Diagnosis   Diagnosis
}

// Error renders e.g. "0/3 nodes are available: 1 node(s) had untolerated taint
// {node.kubernetes.io/unreachable: }, 2 Insufficient cpu. preemption: 0/3 nodes
// are available: 3 Preemption is not helpful for scheduling."
func (f *FitError) Error() string {
	msg := fmt.Sprintf(NoNodeAvailableMsg+":", f.NumAllNodes)
	if f.Diagnosis.PreFilterMsg != "" {
		// A PreFilter rejection applies to every node; listing it per node would repeat it.
		msg += " " + f.Diagnosis.PreFilterMsg + "."
	} else if h := ReasonHistogram(f.Diagnosis.NodeToStatus); h != "" {
		msg += " " + h + "."
	}
	if f.Diagnosis.PostFilterMsg != "" {
		msg += " " + f.Diagnosis.PostFilterMsg + "."
	}
	return msg
}

// NodeError is a plugin's error on one node (a Filter that erred rather than
// rejected). Its message is the plugin's own, as kube-scheduler words it for
// the pod's condition and event, without the node; Node is for the
// scheduler's log, which names it.
type NodeError struct {
	Node string
	Err  error
}

func (e *NodeError) Error() string { return e.Err.Error() }
func (e *NodeError) Unwrap() error { return e.Err }

// ReasonHistogram counts each reason over the nodes and renders
// "<count> <reason>" entries sorted as strings and joined by ", ".
func ReasonHistogram(statuses NodeToStatus) string {
	counts := map[string]int{}
	for _, s := range statuses {
		for _, r := range s.Reasons() {
			counts[r]++
		}
	}
	parts := make([]string, 0, len(counts))
	for r, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
