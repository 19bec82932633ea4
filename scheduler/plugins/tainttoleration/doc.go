// Package tainttoleration is the TaintToleration plugin: a NoSchedule or
// NoExecute taint the pod does not tolerate rules a node out; untolerated
// PreferNoSchedule taints lower its score.
package tainttoleration
