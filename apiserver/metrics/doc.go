// Package metrics counts API requests for Prometheus with kube-apiserver's
// names, labels and label values (apiserver_request_total by verb, dry_run,
// group, version, resource, subresource, scope, component and code;
// apiserver_request_duration_seconds by the same but code), so that
// dashboards and alerts written for Kubernetes work unchanged. Watches,
// which last as long as the client wants, are counted but not timed. The
// Go and process collectors add the runtime's figures, including the
// garbage collector's CPU time, live heap and heap fragmentation, which say
// what the server's soft memory limit costs. Other parts' collectors are
// registered beside them: the store's (skiff_storage_*, see storage/metrics.go).
package metrics
