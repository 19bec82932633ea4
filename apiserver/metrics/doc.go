// Package metrics counts API requests for Prometheus: requests by verb,
// resource and code, and latency histograms by verb and resource (watches,
// which last as long as the client wants, are counted but not timed). The
// Go and process collectors add the runtime's figures, including the
// garbage collector's CPU time, live heap and heap fragmentation, which say
// what the server's soft memory limit costs. Other parts' collectors are
// registered beside them: the store's (skiff_storage_*, see storage/metrics.go).
package metrics
