// Package crashloop is the kubelet's CrashLoopBackOff: how long a container
// that exited waits before its next attempt, and how its status says so
// meanwhile. Both runtimes under the agent restart containers with it — the
// real one on containerd (kubelet/podruntime) and the hollow one
// (kubelet/fakeruntime) — so that they cannot drift apart.
//
// The numbers are the kubelet's defaults (v1.33, with its crash-loop
// feature gates off): a container's first exit is restarted at once (the
// kubelet has no back-off for it yet), the next waits 10s, doubling with
// every attempt that exits in turn, at most 5m; an attempt that ran for
// more than 10 minutes is restarted at once again, and the back-off starts
// again at 10s. The kubelet keys a back-off by the container's spec hash:
// a container restarted from a changed definition starts afresh.
package crashloop
