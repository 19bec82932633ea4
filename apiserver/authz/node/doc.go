// Package node is the node authorizer: a node agent's credential (user
// system:node:<name> in group system:nodes) may do what the system:node
// role lists, and only to its own objects: its Node and Lease, the pods
// bound to it and their status, and the secrets, config maps, claims and
// service account tokens those pods reference, as Kubernetes' Node
// authorizer allows. Relationships come from a Graph of the stored pods.
package node
