// Package containerd runs the node's pods on containerd through its native
// Go client, in a containerd namespace of its own ("skiff" by default) so
// nothing else on the machine is touched or adopted by mistake.
//
// Images come from a registry when one answers, or from OCI/Docker archives
// imported locally (ImportImages, ImportDir for <data-dir>/agent/images);
// they are unpacked with the overlayfs snapshotter. A pull tries the
// credentials it is given (from image pull secrets) in order, through
// containerd's docker resolver: plain HTTP for loopback registries only.
// ImageFSPath is the snapshotter's root, which image garbage collection
// measures. Each container joins its
// pod's network namespace by path, lives in the cgroup
// /skiff/pod<uid>/<container-id>, and has its stdout and stderr appended by the
// containerd shim to its log file, so logs keep flowing while the agent is
// restarting. A container created with Stdin has FIFOs in <IODir>/<id>/
// instead, which the agent copies to the log and holds stdin of for Attach
// (stdio_linux.go); a new Runtime opens them again.
//
// A container's identity (pod UID, pod name and namespace, container name,
// attempt) and, once it has exited, its exit code, reason and times are
// container labels in containerd's metadata store: they survive an agent
// restart and are how ListContainers lets the agent adopt what runs.
package containerd
