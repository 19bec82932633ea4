// Package prober runs a container's liveness, readiness and startup probes
// (exec, httpGet, tcpSocket, grpc) with the timing of the pod spec —
// initialDelaySeconds, periodSeconds, timeoutSeconds, successThreshold,
// failureThreshold — and keeps each probe's current verdict for the pod
// runtime to read: whether a container is ready, has started, or has failed
// its liveness probe and must be restarted.
//
// One worker goroutine per (container, probe kind); workers end when their
// container is pruned. Network probes dial the pod IP from the node, which
// reaches every local pod over the bridge.
package prober
