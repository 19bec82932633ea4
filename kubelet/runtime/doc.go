// Package runtime declares what the node agent asks of a container runtime
// — images, the life cycle of a pod's containers, their status with exit
// codes and reasons, exec — as data types and one interface, so that the
// pod sync loop drives the real containerd implementation
// (kubelet/runtime/containerd) and a hollow one (for scale tests) alike.
//
// A container belongs to a pod by the pod's UID; every runtime records the
// pod UID, pod name and namespace, container name and attempt on the
// container itself, so an agent that restarts can list what runs and adopt it.
package runtime
