// Package nodeproxy carries the pod subresources that a node serves —
// pods/log, pods/exec, pods/attach, pods/portforward — from the API server
// to the node API of the pod's node (kubelet/nodeapi), as kube-apiserver
// does for the kubelet. The API server authenticates to nodes with its own
// client certificate and verifies theirs against the cluster CA.
//
// Streams use Kubernetes' own proxies: the upgrade-aware proxy for SPDY,
// the stream translator for kubectl's WebSocket v5.channel.k8s.io exec and
// attach (nodes speak SPDY), and the tunnelling handler for port-forward
// over WebSocket.
package nodeproxy
