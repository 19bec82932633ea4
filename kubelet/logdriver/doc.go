// Package logdriver writes a container's output in the CRI log format that
// Kubernetes' log tooling reads:
//
//	2026-11-30T05:30:00.123456789Z stdout F a full line
//	2026-11-30T05:30:00.123456790Z stderr P the first part of a long line
//
// It runs as containerd's "binary" logger: the containerd shim starts it
// beside the container with the container's stdout and stderr on fds 3 and
// 4, and waits until fd 5 is closed. Being a child of the shim rather than
// of the agent, it keeps logging while the agent restarts. The skiff binary
// runs Main from a hidden `skiff log-driver <path>` command; containerd
// finds it through URI. Containers with stdin do not use it (the shim
// connects stdin only for FIFO IO): the agent calls Copy itself for them.
package logdriver
