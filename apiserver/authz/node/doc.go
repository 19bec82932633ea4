// Package node is the node authorizer: a node agent's credential (user
// system:node:<name> in group system:nodes) may do what the system:node
// role lists, and only to its own objects: its Node and Lease, the pods
// bound to it and their status, and the secrets, config maps, claims and
// service account tokens those pods reference, and the persistent volumes
// bound to those claims, as Kubernetes' Node authorizer allows;
// relationships come from a Graph of the stored pods, claims and volumes.
// A volume that does not exist is refused (403), as in Kubernetes. One
// relation is skiff's own: a node may get the local-path volumes
// (skiff.io/local-path) pinned to it by their kubernetes.io/hostname node
// affinity, so that its agent can tell, by a 403, that a volume whose
// directory it holds was deleted.
package node
