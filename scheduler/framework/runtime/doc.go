// Package runtime turns a registry of plugin constructors and a profile (which
// plugins, in which order, with which score weights and arguments) into a
// Framework that runs the extension points. The phases of one scheduling
// attempt, in order, are:
//
//	PreFilter   once per pod: reject outright or precompute (RunPreFilterPlugins)
//	Filter      per node, in parallel, until enough feasible nodes (FindFeasibleNodes)
//	PostFilter  only if no node passed: preemption (RunPostFilterPlugins)
//	PreScore    once over the feasible nodes (RunPreScorePlugins)
//	Score       per plugin per node, in parallel; NormalizeScore; × weight (RunScorePlugins)
//	Reserve     on the chosen node, before the asynchronous bind (RunReservePlugins)
//	Bind        in the binding goroutine; Unreserve on any failure (RunBindPlugins)
//
// The scheduler package calls them in exactly this order in scheduleOne.
package runtime
