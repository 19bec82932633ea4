// Package kineproc builds kine (the SQL-backed etcd shim k3s uses) from the Go
// module proxy and runs it as a child process bound to loopback, so the
// benchmark can drive it through its etcd v3 API exactly as the Kubernetes
// apiserver would. kine's code never enters this repository: it is installed
// into a cache directory outside version control.
package kineproc
