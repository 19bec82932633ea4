// Package noderesourcesfit is the NodeResourcesFit plugin: a node fits when
// its allocatable covers what its pods (bound and assumed) already request
// plus the new pod's requests — CPU, memory, ephemeral storage, extended
// resources — and it has room for one more pod. Requests follow Kubernetes'
// rule (the larger of the containers' sum and the biggest init container,
// plus pod overhead). Its score is a strategy chosen by configuration:
// LeastAllocated spreads pods across nodes, MostAllocated packs them, and
// RequestedToCapacityRatio maps each resource's use through a configured
// shape (packing or spreading as the shape rises or falls).
package noderesourcesfit
