// Package crashloop is the kubelet's CrashLoopBackOff: how long a container
// that exited waits before its next attempt, and how its status says so
// meanwhile. Both runtimes under the agent restart containers with it — the
// real one on containerd (kubelet/podruntime) and the hollow one
// (kubelet/fakeruntime) — so that they cannot drift apart.
//
// The numbers are the kubelet's defaults (v1.33, with its crash-loop
// feature gates off): 10s after an attempt's exit, doubling with every
// attempt that exits in turn, at most 5m, and starting again at 10s after
// an attempt that ran for more than 10 minutes.
package crashloop
