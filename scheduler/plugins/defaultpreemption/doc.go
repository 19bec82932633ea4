// Package defaultpreemption is the DefaultPreemption plugin (PostFilter).
// When no node fits a pod, it looks for a node where evicting pods of lower
// priority would make room: on a copy of a node Filter found Unschedulable
// it removes every lower-priority pod, checks the pod fits, then gives back
// as many of them as still leave room (highest priority first). As
// kube-scheduler, it tries nodes from a random one onwards, several at once
// on the framework's goroutines, and stops once it has as many candidates as
// Args (DefaultPreemptionArgs) ask for, one of them evicting no pod a
// PodDisruptionBudget protects; unlike kube-scheduler's, which keeps the
// first found, the candidates are those of a walk node by node (the nodes
// are simulated in rounds, each taken in visiting order). Among the candidates
// it picks the one whose most important victim is least important, then the
// fewest and cheapest victims. It nominates that node for the pod
// (status.nominatedNodeName) at once and deletes the victims through the API
// on a goroutine, as kube-scheduler's asynchronous preemption, its PreEnqueue
// holding the pod out of the active queue until that is done; the pod is
// retried when they are gone, or at once if one could not be deleted.
package defaultpreemption
