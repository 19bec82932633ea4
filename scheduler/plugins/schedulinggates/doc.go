// Package schedulinggates is the SchedulingGates plugin: a pod with
// spec.schedulingGates is held out of the active queue (PreEnqueue) until
// every gate is removed, so whatever set the gates (a quota or batch
// system) decides when the pod may be scheduled.
package schedulinggates
