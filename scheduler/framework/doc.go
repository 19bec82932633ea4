// Package framework holds the vocabulary of skiff's scheduler: the small
// extension-point interfaces a plugin may implement (PreFilter, Filter,
// PostFilter, PreScore, Score with NormalizeScore, Reserve/Unreserve, Bind),
// the per-attempt CycleState, the NodeInfo aggregate the plugins read (pods,
// requested resources, used host ports, image states) and the Status a plugin
// answers with.
//
// A plugin implements only the points it needs; the runtime package discovers
// them with type assertions and runs them in a fixed order. Nothing here talks
// to the API server: plugins that must (binding, preemption) reach it through
// the Handle they are constructed with.
package framework
