// Package podruntime turns a pod spec into running containers on this node:
// it is the real runtime under the agent (kubelet/agent.Runtime), built from
// a container runtime (kubelet/runtime, containerd in production) and the
// pod network (kubelet/network).
//
// SyncPod is level-based: each call reads what runs for the pod and takes
// the next step — set up the network namespace with the agent's pod IP, run
// init containers one at a time in order (a sidecar, an init container with
// restartPolicy Always, lets the next one start once it runs and has
// started, and is kept running until the app containers are done for
// good), start app containers, restart exited ones as restartPolicy asks
// with CrashLoopBackOff delays (kubelet/crashloop: the first exit at once,
// then 10s doubling to 5m, reset after 10m of running) — then reports
// container statuses as Kubernetes shows them. ConfigMap and Secret keys reach env
// (env, envFrom) and volumes (configMap, secret, projected, downwardAPI),
// the volumes being rewritten on every sync so changes reach running
// containers. KillPod stops everything with the grace
// period (SIGTERM, then SIGKILL; the sidecars after the app containers, in
// reverse order) and leaves nothing behind; StopSandbox releases a
// finished pod's network but keeps its stopped containers and logs.
package podruntime
