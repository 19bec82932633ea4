// Package podstate answers the questions controllers ask about a pod's lifecycle: is it active, ready,
// available for a minReadySeconds window, terminating; and which pod port a Service's targetPort
// names (containers first, then sidecar init containers). The definitions follow Kubernetes so that
// counts such as readyReplicas and availableReplicas mean the same thing as on a Kubernetes cluster.
package podstate
