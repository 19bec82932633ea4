// Package agent is the part of the node agent that is the same whatever runs
// the containers: it registers the Node, keeps its Lease and status fresh,
// watches the pods bound to it and turns what the Runtime reports into pod
// status (phase, conditions, IPs). The containerd runtime and the fake
// ("hollow node") runtime both sit under it, so scale tests with hollow nodes
// exercise the same status and heartbeat code as real nodes.
//
// It is an ordinary API client: everything goes through client-go.
package agent
