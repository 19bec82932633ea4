// Package queuesort is the PrioritySort plugin, the scheduling queue's
// order as kube-scheduler's: pods of higher priority are attempted first,
// and of equal priority, the one that entered the queue first. It is the
// only queue sort plugin skiff has, and a profile needs exactly one.
package queuesort
