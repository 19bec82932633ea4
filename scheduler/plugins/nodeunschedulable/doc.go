// Package nodeunschedulable is the NodeUnschedulable plugin: a cordoned node
// (spec.unschedulable) takes only pods tolerating the
// node.kubernetes.io/unschedulable:NoSchedule taint.
package nodeunschedulable
