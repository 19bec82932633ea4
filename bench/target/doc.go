// Package target puts skiff's store and an etcd v3 server (kine) behind one
// small interface, so every benchmark workload runs the same code against
// both. The etcd side issues exactly the transactions the Kubernetes
// apiserver issues (create = "mod revision is 0, then put"; update = "mod
// revision is N, then put, else get"), which are also the only shapes kine
// accepts.
package target
