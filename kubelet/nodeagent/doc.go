// Package nodeagent runs a real node: the agent (kubelet/agent) over
// containerd and the pod network (kubelet/podruntime), opened once node IPAM
// has given the node its pod CIDR, and the node API (kubelet/nodeapi) over
// HTTPS for the API server's logs, exec and port-forward. `skiff agent
// --runtime containerd` and the agent embedded in `skiff server` both run it.
package nodeagent
