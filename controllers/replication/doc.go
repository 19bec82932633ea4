// Package replication keeps the number of running pods of each ReplicationController (core/v1)
// equal to spec.replicas.
//
// It is the ReplicaSet controller (package replicaset) run on ReplicationControllers converted to
// the ReplicaSets they stand for, as Kubernetes' replication manager is: the informer, lister and
// client given to it convert on the way in and out, the pods it creates and adopts carry a
// controller reference of kind ReplicationController, and its events are recorded on the
// ReplicationController.
package replication
