// Package replicaset keeps the number of running pods of each ReplicaSet equal to spec.replicas.
//
// Sync is level-based: it lists the namespace's pods from the informer cache, claims the ones whose
// labels match the selector (adopting orphans, releasing pods that stopped matching), creates pods from
// the template or deletes the least valuable ones, and writes status (replicas, fullyLabeledReplicas,
// readyReplicas, availableReplicas, observedGeneration, the ReplicaFailure condition). Expectations keep
// a cache that lags behind the controller's own creates and deletes from causing double work.
package replicaset
